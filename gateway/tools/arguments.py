"""Strict tool arguments: what every MCP tool accepts, checked once for all tools before any tool runs.

The SDK builds each tool's argument model from its signature (`func_metadata`) with pydantic's lax defaults:
unknown arguments are dropped, `"0.5"` becomes 0.5, `"yes"` becomes True, and a JSON string is parsed into the
list or object a field wants. `make_strict` swaps that model for a strict subclass (`strict=True`,
`extra="forbid"`) and turns off the JSON-in-a-string parsing, so an unknown argument or a wrong JSON type is an
error naming the field. `argument_problems` then walks every argument value (bounded depth, finite numbers,
clean strings: `memory.values`) so no tool sees a value the stores could not read back.

`publish_bounds` writes the engine's limits into each tool's published `inputSchema` (lengths, ranges, item
counts, `format: date-time`), so a client or an LLM sees what the engine will accept; the engine still checks
every one of them and names the field when one is broken. `compact` keeps that schema lean (an agent pays for
every tool definition on every turn; issue #30): no titles, no null defaults or null branches.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from pydantic import ConfigDict, ValidationError

from memory.errors import InvalidArgument
from memory.transfer import MAX_IMPORT_RECORDS
from memory.validation import EngineLimits
from memory.values import MAX_JSON_DEPTH, check_json_value, string_problem

STRICT = ConfigDict(strict=True, extra="forbid", arbitrary_types_allowed=True)
# Arguments that hold JSON values further down, and how far: import_memories' records, write_memories' items
# (lists of objects)
HOLDERS = {"records": 2, "items": 2}
JSON_TYPES = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array"}


class StrictFuncMetadata(FuncMetadata):
    """A tool's metadata whose arguments are taken as sent: no JSON parsing of strings into lists or objects."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return dict(data)


def make_strict(tool: Tool) -> None:
    """Make `tool` validate its arguments strictly (unknown arguments and wrong JSON types refused), and publish
    its schema `compact`."""
    lax = tool.fn_metadata
    model: type[ArgModelBase] = type(
        lax.arg_model.__name__, (lax.arg_model,), {"model_config": STRICT, "__module__": lax.arg_model.__module__}
    )
    tool.fn_metadata = StrictFuncMetadata(
        arg_model=model, output_schema=lax.output_schema, output_model=lax.output_model, wrap_output=lax.wrap_output
    )
    tool.parameters = compact(model.model_json_schema(by_alias=True))


SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")  # keywords whose value is a list of schemas
SCHEMA_MAPS = ("properties", "$defs", "patternProperties")  # keywords whose value maps names to schemas


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (pydantic's JSON Schema of a tool's arguments) as published: what a caller needs and no more, since an
    agent pays for every tool definition on every turn. Left out: `title`s, a `default` of null or false (what leaving
    the argument out means anyway), `minLength: 1`, `additionalProperties` true or false (the strict argument model
    refuses an argument the schema does not name, naming it: the schema need not) and a `$defs` model's docstring
    (written for code readers, not callers). An optional argument's `anyOf [X, null]` is published as X: leave it out
    rather than send null. The published schema only guides the caller; the strict argument model still decides (and
    still takes null where it did)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if _noise(key, value):
            continue
        if key in SCHEMA_MAPS and isinstance(value, dict):
            required = set(schema.get("required", ())) if key == "properties" else set()
            value = {name: _member(key, sub, optional=name not in required) for name, sub in value.items()}
        elif key in SCHEMA_LISTS and isinstance(value, list):
            value = [compact(sub) if isinstance(sub, dict) else sub for sub in value]
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            value = compact(value)
        out[key] = value
    return out


def _noise(key: str, value: object) -> bool:
    if key == "title":
        return isinstance(value, str)
    if key == "default":
        return value is None or value is False
    if key == "minLength":
        return value == 1  # non-empty: what any caller sends
    return key == "additionalProperties" and isinstance(value, bool)  # strict models refuse the rest anyway


def _member(keyword: str, schema: object, optional: bool) -> object:
    """A property's schema (an optional one without its null branch), or a `$defs` model's (without its docstring)."""
    if not isinstance(schema, dict):
        return schema
    shaped = compact(schema)
    if keyword == "$defs":
        shaped.pop("description", None)
    branches = shaped.get("anyOf")
    if keyword == "properties" and optional and isinstance(branches, list):
        kept = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
        if len(kept) == 1 and isinstance(kept[0], dict):
            rest = {k: v for k, v in shaped.items() if k != "anyOf"}
            shaped = {**kept[0], **rest}
        elif len(kept) < len(branches):
            shaped["anyOf"] = kept
    return shaped


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    return next((name for kind, name in JSON_TYPES.items() if type(value) is kind), type(value).__name__)


def validation_problems(error: ValidationError) -> list[str]:
    """One line per problem, naming the field (never echoing the value, which is the caller's data)."""
    problems: set[str] = set()
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        if item["type"] == "extra_forbidden":
            problems.add(f"{where}: unknown argument")
        elif item["type"] == "missing":
            problems.add(f"{where}: required")
        elif item["type"].endswith("_type"):
            problems.add(f"{where}: {item['msg']} (got {_json_type(item['input'])})")
        else:
            problems.add(f"{where}: {item['msg']}")
    return sorted(problems)


def argument_problems(arguments: dict[str, Any]) -> list[str]:
    """What makes any argument value unstorable (`memory.values.check_json_value`), one line per argument."""
    problems: list[str] = []
    for name, value in arguments.items():
        try:
            check_json_value(
                value,
                name if string_problem(name) is None else "an argument",
                max_depth=MAX_JSON_DEPTH + HOLDERS.get(name, 0),
            )
        except InvalidArgument as exc:
            problems.append(exc.message)
    return problems


def bounds(limits: EngineLimits) -> dict[str, dict[str, Any]]:
    """The JSON Schema keywords of each argument name, wherever a tool has it: the engine's bounds a caller may
    run into. Every tool definition costs an agent tokens on every turn (issue #30), so bounds a caller hardly
    meets are not published (docs/TOOLS.md lists them; the engine still checks them and names the field): the
    id patterns of `session_id` and `request_id` (1-128 letters, digits and ':_.@-'; some forty tokens each in
    nearly every tool), the ceilings of `ttl_seconds`, of a tag's length and of the namespaces of one call, and
    that counts, sizes and texts are positive or non-empty."""
    instant = {"format": "date-time"}
    return {
        "content": {"maxLength": limits.max_content_chars},
        "query": {"maxLength": limits.max_query_chars},
        "importance": {"minimum": 0, "maximum": 1},
        "top_k": {"maximum": limits.max_top_k},
        "token_budget": {"maximum": limits.max_token_budget},
        "limit": {"maximum": limits.max_list_limit},
        "tags": {"maxItems": limits.max_tags},
        "occurred_at": instant,
        "since": instant,
        "until": instant,
        "as_of": instant,
        "records": {"maxItems": MAX_IMPORT_RECORDS},
        "items": {"maxItems": limits.max_batch_items},
    }


def publish_bounds(parameters: dict[str, Any], limits: EngineLimits) -> None:
    """Add `bounds(limits)` to the schema of each argument of a tool's `inputSchema` that has one (to the
    non-null branches of one still published with `anyOf`); the same for the fields of the objects an argument
    holds (`$defs`: write_memories' items)."""
    table = bounds(limits)
    for holder in [parameters, *parameters.get("$defs", {}).values()]:
        for name, schema in holder.get("properties", {}).items():
            if name not in table:
                continue
            branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") not in (None, "null")]
            for branch in branches:  # a bound the tool declares itself stands (export_events' smaller limit)
                branch.update({key: value for key, value in table[name].items() if key not in branch})
