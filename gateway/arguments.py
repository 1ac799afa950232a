"""Strict tool arguments: what every MCP tool accepts, checked once for all tools before any tool runs.

The SDK builds each tool's argument model from its signature (`func_metadata`) with pydantic's lax defaults:
unknown arguments are dropped, `"0.5"` becomes 0.5, `"yes"` becomes True, and a JSON string is parsed into the
list or object a field wants. `make_strict` swaps that model for a strict subclass (`strict=True`,
`extra="forbid"`) and turns off the JSON-in-a-string parsing, so an unknown argument or a wrong JSON type is an
error naming the field. `argument_problems` then walks every argument value (bounded depth, finite numbers,
clean strings: `memory.values`) so no tool sees a value the stores could not read back.

`publish_bounds` writes the engine's limits into each tool's published `inputSchema` (lengths, ranges, item
counts, id patterns, `format: date-time`), so a client or an LLM sees what the engine will accept; the engine
still checks every one of them and names the field when one is broken.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from pydantic import ConfigDict, ValidationError

from memory.errors import InvalidArgument
from memory.validation import REQUEST_ID_PATTERN, SESSION_ID_PATTERN, EngineLimits
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
    """Make `tool` validate its arguments strictly and publish `additionalProperties: false`."""
    lax = tool.fn_metadata
    model: type[ArgModelBase] = type(
        lax.arg_model.__name__, (lax.arg_model,), {"model_config": STRICT, "__module__": lax.arg_model.__module__}
    )
    tool.fn_metadata = StrictFuncMetadata(
        arg_model=model, output_schema=lax.output_schema, output_model=lax.output_model, wrap_output=lax.wrap_output
    )
    tool.parameters = model.model_json_schema(by_alias=True)


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


MAX_IMPORT_BATCH = 500  # records per import_memories call


def bounds(limits: EngineLimits) -> dict[str, dict[str, Any]]:
    """The JSON Schema keywords of each argument name, wherever a tool has it (what the engine checks)."""
    ids = {"minLength": 1, "maxLength": 128}
    instant = {"format": "date-time"}
    namespaces = {"maxItems": limits.max_namespaces_per_call}
    return {
        "content": {"minLength": 1, "maxLength": limits.max_content_chars},
        "query": {"minLength": 1, "maxLength": limits.max_content_chars},
        "importance": {"minimum": 0, "maximum": 1},
        "top_k": {"minimum": 1, "maximum": limits.max_top_k},
        "limit": {"minimum": 1, "maximum": limits.max_list_limit},
        "token_budget": {"minimum": 1},
        "ttl_seconds": {"minimum": 1, "maximum": limits.max_ttl_seconds},
        "tags": {"maxItems": limits.max_tags, "items": {"type": "string", "maxLength": limits.max_tag_chars}},
        "session_id": {**ids, "pattern": f"^{SESSION_ID_PATTERN.pattern}$"},
        "request_id": {**ids, "pattern": f"^{REQUEST_ID_PATTERN.pattern}$"},
        "occurred_at": instant,
        "since": instant,
        "until": instant,
        "namespaces": namespaces,
        "share_to": namespaces,
        "records": {"maxItems": MAX_IMPORT_BATCH},
        "items": {"maxItems": limits.max_batch_items},
    }


def publish_bounds(parameters: dict[str, Any], limits: EngineLimits) -> None:
    """Add `bounds(limits)` to the schema of each argument of a tool's `inputSchema` that has one: to the
    non-null branch of an optional argument; the same for the fields of the objects an argument holds
    (`$defs`: write_memories' items)."""
    table = bounds(limits)
    for holder in [parameters, *parameters.get("$defs", {}).values()]:
        for name, schema in holder.get("properties", {}).items():
            if name not in table:
                continue
            branches = [b for b in schema.get("anyOf", [schema]) if b.get("type") not in (None, "null")]
            for branch in branches:
                branch.update(table[name])
