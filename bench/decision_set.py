"""The labelled decision set of `bench/decisions/`: its case schema, loading, and the resolution of its references.

A case is a small scenario: zero or more earlier memories, then one new statement, and the decision the write
pipeline should take on that statement (issue #13):

- `keep`: stored, nothing else changes;
- `expire`: the statement is only a plan, appointment, deadline or reminder about a time after it was said (a
  plan beside a lasting fact, a health condition, a job, a preference or a past event is `keep`: reading it as a
  plan would demote those too); `day` is the last day the plan is about;
- `supersede`: a new value of the same attribute of the same subject: replaces the earlier memory `target`;
- `merge`: the same statement again in other words: updates the earlier memory `target` in place;
- `skip`: pure chit-chat or acknowledgement, not stored.

A memory is either a reference into the evaluation data beside the repository (`<repo>/../shared/datasets`,
never copied into the repository) or a text of the set's own making:

    {"ref": {"dataset": "locomo", "sample_id": "conv-26", "dia_id": "D1:3"}}
    {"ref": {"dataset": "memorybank_cn", "user": "张曼婷", "date": "2023-04-27", "index": 1, "field": "query"}}
    {"ref": {"dataset": "locomo", "sample_id": "conv-26", "field": "observation", "session": 1,
             "speaker": "Caroline", "index": 0}}
    {"text": "I live in Berlin", "at": "2023-05-01T09:00:00Z", "speaker": "Ana", "subject": "bob"}

A LoCoMo turn is dated by its session's date time and spoken by its speaker. LoCoMo's own third-person notes of a
session (`field` "observation": facts extracted per speaker, "Caroline is planning to ..."; "event": the
session's events per speaker; "summary": the session's summary, without speaker or index) are dated by their
session and have no speaker. A MemoryBank turn is dated by its history date (at 12:00 UTC plus one minute per
turn index, so turns keep their order) and spoken by the user (logged as the user's own text; the user's name
appears only in a header).
`subject` is the token subject that writes the memory (default: the case's writer, one agent).

The case's `format` says how every memory of it is written, the ways agents log turns: `plain` (the text, or
"Speaker: text", without `occurred_at`: the gateway's clock dates it), `header`
("[1:10 pm on 27 March, 2023] Speaker: text" with `occurred_at`) and `occurred_at` (the text with `occurred_at`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CASES_DIR = Path(__file__).with_name("decisions")
DATASETS = REPO.parent / "shared" / "datasets"
KINDS = ("keep", "expire", "supersede", "merge", "skip")
FORMATS = ("plain", "header", "occurred_at")
LANGUAGES = ("en", "zh")
WRITER = "agent"  # the token subject that writes a case's memories unless a memory names another
_LOCOMO = "locomo/locomo10-dev.json"
_MEMORYBANK = {"memorybank_cn": "memorybank/memory_bank_cn.json", "memorybank_en": "memorybank/memory_bank_en.json"}


class SetError(ValueError):
    """A case that is malformed or whose reference resolves to nothing in the datasets."""


@dataclass(frozen=True, slots=True)
class Text:
    """One memory of a scenario, resolved: what was said, by whom, when, and which subject writes it."""

    text: str
    at: datetime
    speaker: str | None
    subject: str
    source: str  # "own" or the dataset it was read from
    named: bool = True  # the speaker's name is part of the text logged (a dialogue turn), not only of a header

    def content(self, fmt: str) -> str:
        said = f"{self.speaker}: {self.text}" if self.speaker and (self.named or fmt == "header") else self.text
        if fmt == "header":
            return f"[{header_time(self.at)}] {said}"
        return said


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    lang: str
    format: str
    earlier: tuple[Text, ...]
    statement: Text
    expected: str
    day: date | None = None  # expire: the day it expires at the end of
    target: int | None = None  # supersede / merge: index of the earlier memory concerned
    why: str = ""
    tags: tuple[str, ...] = field(default=())

    @property
    def source(self) -> str:
        return self.statement.source


def header_time(at: datetime) -> str:
    """LoCoMo's session time format: '1:56 pm on 8 May, 2023'."""
    hour = at.hour % 12 or 12
    return f"{hour}:{at.minute:02d} {'am' if at.hour < 12 else 'pm'} on {at.day} {at:%B}, {at.year}"


def parse_locomo_time(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


@cache
def read_json(relative: str, root: Path) -> Any:
    path = root / relative
    if not path.exists():
        raise SetError(f"the evaluation data must be beside the repository: {path} is missing")
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def locomo_turns(root: Path = DATASETS) -> dict[tuple[str, str], tuple[str, str, datetime]]:
    """(sample id, dia id) -> (speaker, text, session time) for every LoCoMo dev turn."""
    turns: dict[tuple[str, str], tuple[str, str, datetime]] = {}
    for conversation in read_json(_LOCOMO, root):
        sessions = conversation["conversation"]
        for key, value in sessions.items():
            if key.startswith("session_") and isinstance(value, list):
                at = parse_locomo_time(sessions[f"{key}_date_time"])
                for turn in value:
                    turns[(conversation["sample_id"], turn["dia_id"])] = (turn["speaker"], turn["text"], at)
    return turns


@cache
def locomo_facts(root: Path = DATASETS) -> dict[tuple[str, str, int, str, int], tuple[str, datetime]]:
    """(sample id, field, session, speaker, index) -> (text, session time) for every LoCoMo dev observation
    (`field` "observation"), event (`event`) and session summary (`summary`, speaker "" and index 0)."""
    found: dict[tuple[str, str, int, str, int], tuple[str, datetime]] = {}
    for conversation in read_json(_LOCOMO, root):
        sample, sessions = conversation["sample_id"], conversation["conversation"]
        times = {k: parse_locomo_time(v) for k, v in sessions.items() if k.endswith("_date_time")}

        def when(number: int, times: dict[str, datetime] = times) -> datetime:
            return times[f"session_{number}_date_time"]

        for key, by_speaker in conversation.get("observation", {}).items():
            number = int(key.removeprefix("session_").removesuffix("_observation"))
            for speaker, items in by_speaker.items():
                for index, item in enumerate(items):
                    found[(sample, "observation", number, speaker, index)] = (str(item[0]), when(number))
        for key, by_speaker in conversation.get("event_summary", {}).items():
            number = int(key.removeprefix("events_session_"))
            for speaker, items in by_speaker.items():
                if speaker != "date":
                    for index, item in enumerate(items):
                        found[(sample, "event", number, speaker, index)] = (str(item), when(number))
        for key, summary in conversation.get("session_summary", {}).items():
            number = int(key.removeprefix("session_").removesuffix("_summary"))
            found[(sample, "summary", number, "", 0)] = (str(summary), when(number))
    return found


def memorybank(dataset: str, root: Path = DATASETS) -> dict[str, Any]:
    if dataset not in _MEMORYBANK:
        raise SetError(f"unknown dataset {dataset!r}")
    data: dict[str, Any] = read_json(_MEMORYBANK[dataset], root)
    return data


def memorybank_time(day: str, index: int) -> datetime:
    return datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC) + timedelta(minutes=index)


def _resolve(raw: dict[str, Any], root: Path) -> Text:
    subject = str(raw.get("subject", WRITER))
    if "text" in raw:
        at = datetime.fromisoformat(str(raw["at"]).replace("Z", "+00:00"))
        if at.tzinfo is None:
            raise SetError(f"own text {raw['text']!r}: 'at' needs a time zone")
        return Text(str(raw["text"]), at, raw.get("speaker"), subject, "own")
    ref = raw.get("ref")
    if not isinstance(ref, dict):
        raise SetError(f"a memory needs 'text' or 'ref': {raw}")
    dataset = ref.get("dataset")
    if dataset == "locomo" and "field" in ref:
        key = (ref["sample_id"], ref["field"], int(ref["session"]), ref.get("speaker", ""), int(ref.get("index", 0)))
        fact = locomo_facts(root).get(key)
        if fact is None:
            raise SetError(f"no LoCoMo {ref['field']} {key}")
        return Text(fact[0], fact[1], None, subject, "locomo_facts")
    if dataset == "locomo":
        found = locomo_turns(root).get((ref["sample_id"], ref["dia_id"]))
        if found is None:
            raise SetError(f"no LoCoMo turn {ref['sample_id']} {ref['dia_id']}")
        speaker, text, at = found
        return Text(text, at, speaker, subject, "locomo")
    user: dict[str, Any] = memorybank(str(dataset), root).get(ref["user"]) or {}
    turns = user.get("history", {}).get(ref["date"])
    index, part = int(ref["index"]), ref.get("field", "query")
    if turns is None or not 0 <= index < len(turns) or part not in ("query", "response"):
        raise SetError(f"no MemoryBank turn {dataset} {ref['user']!r} {ref['date']} {index} {part}")
    user_name = str(user["name"]).strip() if part == "query" else None  # the user speaks the queries
    at = memorybank_time(ref["date"], index)
    return Text(turns[index][part], at, user_name, subject, str(dataset), named=False)


def parse_case(raw: dict[str, Any], root: Path = DATASETS) -> Case:
    case_id = str(raw.get("id", "?"))
    try:
        expected, fmt, lang = raw["expected"], raw.get("format", "occurred_at"), raw["lang"]
        earlier = tuple(_resolve(m, root) for m in raw.get("earlier", []))
        statement = _resolve(raw["statement"], root)
        day = date.fromisoformat(raw["day"]) if raw.get("day") else None
        target = raw.get("target")
    except (KeyError, TypeError, ValueError) as error:
        raise SetError(f"case {case_id}: {error!r}") from error
    if expected not in KINDS or fmt not in FORMATS or lang not in LANGUAGES:
        raise SetError(f"case {case_id}: expected/format/lang must be one of {KINDS} / {FORMATS} / {LANGUAGES}")
    if (expected == "expire") != (day is not None):
        raise SetError(f"case {case_id}: 'day' is given exactly for expire")
    if (expected in ("supersede", "merge")) != (target is not None):
        raise SetError(f"case {case_id}: 'target' is given exactly for supersede and merge")
    if target is not None and not 0 <= int(target) < len(earlier):
        raise SetError(f"case {case_id}: target {target} names no earlier memory")
    if any(m.at > statement.at for m in earlier):
        raise SetError(f"case {case_id}: an earlier memory is dated after the statement")
    tags = tuple(str(t) for t in raw.get("tags", []))
    return Case(case_id, lang, fmt, earlier, statement, expected, day, target, str(raw.get("why", "")), tags)


def load(directory: Path = CASES_DIR, root: Path = DATASETS) -> list[Case]:
    """Every case of every `*.jsonl` file of the set, in file and line order; ids are unique."""
    cases: list[Case] = []
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    cases.append(parse_case(json.loads(line), root))
                except (SetError, json.JSONDecodeError) as error:
                    raise SetError(f"{path.name}:{number}: {error}") from error
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise SetError(f"duplicate case id {case.id}")
        seen.add(case.id)
    return cases
