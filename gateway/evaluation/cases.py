"""A tenant's own recall cases (`hindsight eval cases FILE.jsonl`): the case file, loaded and checked strictly
line by line (unknown fields refused, types checked, `FILE:LINE: what is wrong`). Nothing here knows how the
memories are written or the query asked: the gateway drives both over MCP (`gateway/evaluation/tenant_cases.py`);
`gateway.evaluation.case_scores` scores what recall answered and `gateway.evaluation.case_report` prints it.

The file holds one JSON object per line (blank lines and lines starting with `#` are skipped):

    {"memories": [{"content": "...", ...write_memory arguments}], "query": "...", "expected": ["..."]}

A case's memories are written into a namespace of its own, so no case answers another; each `expected` string
names a memory by its exact content (or, in a namespace a running gateway already holds, by its id). Optional:
`id`, `note`, `top_k` (the cut-off and the number of hits asked for; else `--k`) and the recall arguments of
`RECALL_FIELDS`. A case that names a `namespace` writes its memories there instead, and a later case naming the
same namespace without `memories` asks that namespace as earlier lines left it (cases run in file order). A
namespace no line gives memories is one the gateway already holds: only against a running gateway (`--url`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory.scope import NAMESPACE_PATTERN

KINDS = ("episodic", "semantic")
MAX_TOP_K = 100
OWN_PREFIX = "eval-case-"  # the evaluation's own namespaces: `eval-case-<n>` (no file namespace may start so)
Check = Callable[[object], str | None]  # a problem with the value (None: fine)


class CaseFileError(ValueError):
    """A line of the case file that is not a valid case: `FILE:LINE: what is wrong`."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


def _json_type(value: object) -> str:
    names = {bool: "a boolean", str: "a string", int: "an integer", float: "a number", list: "an array"}
    if value is None:
        return "null"
    return "an object" if isinstance(value, dict) else names.get(type(value), type(value).__name__)


def _text(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {_json_type(value)}"
    return None if value.strip() else "must not be empty"


def _strings(value: object) -> str | None:
    if not isinstance(value, list):
        return f"must be an array of strings, got {_json_type(value)}"
    bad = next((i for i, item in enumerate(value) if _text(item)), None)
    return None if bad is None else f"[{bad}] {_text(value[bad])}"


def _expected(value: object) -> str | None:
    return _strings(value) or (None if value else "must name at least one memory")


def _kind(value: object) -> str | None:
    return None if value in KINDS else f"must be one of {', '.join(KINDS)}"


def _kinds(value: object) -> str | None:
    problem = _strings(value)
    if problem is None and isinstance(value, list):
        problem = next((f"[{i}] {p}" for i, k in enumerate(value) if (p := _kind(k))), None)
    return problem


def _integer(low: int, high: int) -> Check:
    def check(value: object) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return f"must be an integer, got {_json_type(value)}"
        return None if low <= value <= high else f"must lie in [{low}, {high}]"

    return check


def _fraction(value: object) -> str | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return f"must be a number, got {_json_type(value)}"
    return None if 0 <= value <= 1 else "must lie in [0, 1]"


def _boolean(value: object) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {_json_type(value)}"


def _object(value: object) -> str | None:
    return None if isinstance(value, dict) else f"must be an object, got {_json_type(value)}"


def _instant(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be an ISO 8601 time string, got {_json_type(value)}"
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return "must be an ISO 8601 time, e.g. 2025-03-01T09:00:00Z"
    return None


def _namespace(value: object) -> str | None:
    if not isinstance(value, str) or not NAMESPACE_PATTERN.fullmatch(value):
        return "must match [a-z0-9][a-z0-9:_.-]{0,127} (lowercase letters, digits, ':', '_', '.', '-')"
    return f"names starting with {OWN_PREFIX!r} are the evaluation's own" if value.startswith(OWN_PREFIX) else None


# write_memory's arguments a memory may carry, and those the evaluation sets itself
MEMORY_FIELDS: dict[str, Check] = {
    "content": _text,
    "kind": _kind,
    "importance": _fraction,
    "tags": _strings,
    "ttl_seconds": _integer(1, 10 * 365 * 86_400),
    "session_id": _text,
    "occurred_at": _instant,
    "metadata": _object,
    "force": _boolean,
}
MEMORY_SET = {
    "namespace": "a memory goes to its case's namespace (name one with the case's \"namespace\")",
    "share_to": "a case writes its own namespace only",
    "request_id": "the evaluation gives each write its own",
    "explain": "the evaluation asks for it itself",
}
# recall_memory's arguments a case may carry (besides `top_k`), and those the evaluation sets itself
RECALL_FIELDS: dict[str, Check] = {
    "kinds": _kinds,
    "tags": _strings,
    "session_id": _text,
    "since": _instant,
    "until": _instant,
    "include_superseded": _boolean,
    "token_budget": _integer(1, 1_000_000),
}
RECALL_SET = {
    "namespaces": 'a case recalls its own namespace (name one with "namespace")',
    "explain": "always on: the report shows the score parts",
    "format": "the evaluation reads the memories themselves",
    "detail": "the evaluation reads the memories themselves",
    "order": "the hits are ranked by score",
}
CASE_FIELDS: dict[str, Check] = {
    "id": _text,
    "note": _text,
    "query": _text,
    "expected": _expected,
    "namespace": _namespace,
    "top_k": _integer(1, MAX_TOP_K),
    "memories": lambda v: None if isinstance(v, list) else f"must be an array, got {_json_type(v)}",
    **RECALL_FIELDS,
}


@dataclass(frozen=True, slots=True)
class Case:
    number: int  # 1-based, in file order: the case's own namespace is eval-case-<number>
    line: int
    id: str
    query: str
    expected: tuple[str, ...]
    memories: tuple[dict[str, Any], ...] = ()
    namespace: str | None = None  # a namespace it shares with other cases (or the gateway already holds)
    top_k: int | None = None
    recall: dict[str, Any] = field(default_factory=dict)  # the other recall_memory arguments
    note: str | None = None


def _fields(value: dict[str, Any], allowed: dict[str, Check], set_here: dict[str, str], where: str) -> None:
    for name, item in value.items():
        if name in set_here:
            raise ValueError(f'{where}"{name}" is not accepted: {set_here[name]}')
        check = allowed.get(name)
        if check is None:
            raise ValueError(f'{where}unknown field "{name}" (known: {", ".join(allowed)})')
        problem = check(item)
        if problem is not None:
            raise ValueError(f"{where}{name} {problem}")


def _memory(value: object, index: int) -> dict[str, Any]:
    where = f"memories[{index}]"
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object, got {_json_type(value)}")
    _fields(value, MEMORY_FIELDS, MEMORY_SET, f"{where}.")
    if "content" not in value:
        raise ValueError(f"{where}.content is required")
    return value


def parse_case(value: dict[str, Any], number: int, line: int) -> Case:
    """One case from its JSON object; `ValueError` naming the first problem."""
    _fields(value, CASE_FIELDS, RECALL_SET, "")
    for name in ("query", "expected"):
        if name not in value:
            raise ValueError(f"{name} is required")
    memories = tuple(_memory(m, i) for i, m in enumerate(value.get("memories", [])))
    if "memories" in value and not memories:
        raise ValueError("memories must not be empty (omit it to ask a namespace as earlier lines left it)")
    if not memories and "namespace" not in value:
        raise ValueError('memories is required (or "namespace": one that earlier lines or the gateway filled)')
    return Case(
        number=number,
        line=line,
        id=value.get("id", f"case-{number}"),
        query=value["query"],
        expected=tuple(value["expected"]),
        memories=memories,
        namespace=value.get("namespace"),
        top_k=value.get("top_k"),
        recall={name: value[name] for name in RECALL_FIELDS if name in value},
        note=value.get("note"),
    )


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f'field "{key}" is given twice')
        found[key] = value
    return found


def _not_a_number(token: str) -> float:
    raise ValueError(f"{token} is not a JSON number")


def load_cases(path: Path) -> list[Case]:
    """Every case of the file, in order; `CaseFileError` at the first line that is not a valid case."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CaseFileError(path, 0, "not UTF-8 text") from None
    cases: list[Case] = []
    lines_of: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            value = json.loads(stripped, object_pairs_hook=_no_duplicates, parse_constant=_not_a_number)
        except json.JSONDecodeError as exc:
            raise CaseFileError(path, number, f"not JSON: {exc.msg} (column {exc.colno})") from None
        except ValueError as exc:
            raise CaseFileError(path, number, str(exc)) from None
        if not isinstance(value, dict):
            raise CaseFileError(path, number, f"a case is a JSON object, got {_json_type(value)}")
        try:
            case = parse_case(value, len(cases) + 1, number)
        except ValueError as exc:
            raise CaseFileError(path, number, str(exc)) from None
        if case.id in lines_of:
            raise CaseFileError(path, number, f'id "{case.id}" is the id of line {lines_of[case.id]} too')
        lines_of[case.id] = number
        cases.append(case)
    if not cases:
        raise CaseFileError(path, 0, "no cases: one JSON object per line")
    return cases


def filled_namespaces(cases: Sequence[Case]) -> set[str]:
    """The namespaces the file itself fills (some case names it with memories)."""
    return {c.namespace for c in cases if c.namespace is not None and c.memories}


def check_namespaces(path: Path, cases: Sequence[Case], *, gateway_holds: bool) -> None:
    """That every case can be answered: a shared namespace is filled by an earlier line (or, with
    `gateway_holds`, is one the gateway already holds), and every `expected` of a namespace the file fills is
    the exact content of a memory written there by then (ids of fresh memories are not known beforehand)."""
    filled = filled_namespaces(cases)
    contents: dict[str, set[str]] = {}
    for case in cases:
        where = case.namespace or f"{OWN_PREFIX}{case.number}"
        if case.memories:
            contents.setdefault(where, set()).update(m["content"].strip() for m in case.memories)
        elif where not in contents:
            if where in filled:
                raise CaseFileError(path, case.line, f'namespace "{where}" gets its memories only on a later line')
            if not gateway_holds:
                raise CaseFileError(
                    path,
                    case.line,
                    f'namespace "{where}" holds nothing in a fresh store: give "memories" here or on an earlier '
                    "line, or run against a gateway that holds it (--url)",
                )
            continue  # the gateway's own namespace: an expected may be an id or a content
        for i, expected in enumerate(case.expected):
            if expected.strip() not in contents[where]:
                raise CaseFileError(
                    path,
                    case.line,
                    f"expected[{i}] is not the exact content of a memory written to {where!r} by this line or an "
                    "earlier one (an id names a memory only in a namespace the gateway already holds)",
                )
