"""Admin MCP tools for a namespace's lifecycle (`memory:admin`): export to JSONL records (forgotten and archived
ones too), import them (re-embedded with the current model; the whole batch checked before the first write; a
record exported as forgotten or archived is stored so; its author kept, the importer recorded beside it), and purge
(the only hard delete)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from gateway.admin.erasure import purge_everywhere
from gateway.answers import ConsolidateAnswer, ExportAnswer, ImportAnswer, PurgeAnswer
from gateway.arguments import MAX_IMPORT_BATCH
from gateway.runtime import Runtime
from gateway.serialize import RECORD_FIELDS, TIME_FIELDS, memory_json
from gateway.tool_support import SCOPE_META, current_call
from memory.consolidation import consolidate_now
from memory.errors import InvalidArgument
from memory.models import WriteStatus
from memory.requests import ListRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.validation import (
    EngineLimits,
    check_content,
    check_importance,
    check_json_object,
    check_kind,
    check_session_id,
    check_tags,
    parse_instant,
)
from memory.values import check_text
from tenancy import SCOPE_ADMIN, Principal
from tenancy.claims import MAX_SUBJECT_LENGTH

AdminNamespace = str  # the namespace to act on, e.g. 'user:42' (docs/TOOLS.md: arguments described by name alone)
MAX_REASON_CHARS = 500


def check_reason(value: object, applies: bool, field: str, default: str) -> str | None:
    """The reason an exported record was archived or forgotten with (`field`; none for a record that is neither,
    `default` for one exported without a reason)."""
    if not applies:
        return None
    if value is None:
        return default
    if not isinstance(value, str) or len(value) > MAX_REASON_CHARS:
        raise InvalidArgument(f"{field} must be a string of at most {MAX_REASON_CHARS} characters")
    return check_text(value, field)


def check_author(value: object, importer: str) -> str:
    """The author an exported record names (`source.subject`), kept beside its importer; the importer when the
    record names none."""
    if value is None:
        return importer
    subject = value.get("subject") if isinstance(value, dict) else value
    if not isinstance(subject, str) or not subject.strip() or len(subject) > MAX_SUBJECT_LENGTH:
        raise InvalidArgument(f"source.subject must be a non-empty string of at most {MAX_SUBJECT_LENGTH} characters")
    return check_text(subject, "source.subject")


def check_records(
    records: list[dict[str, Any]], principal: Principal, namespace: str, limits: EngineLimits
) -> list[WriteRequest]:
    """Check every record before any is written (a bad record at index 5 must not leave the first five
    imported): only the fields an export writes, each of the right type, every time within 1970-2200 UTC."""
    if len(records) > MAX_IMPORT_BATCH:
        raise InvalidArgument(f"import at most {MAX_IMPORT_BATCH} records per call")
    checked: list[WriteRequest] = []
    for index, record in enumerate(records):
        where = f"records[{index}]"
        if not isinstance(record, dict):
            raise InvalidArgument(f"{where} must be an object with a 'content' string")
        if unknown := sorted(set(record) - RECORD_FIELDS):
            raise InvalidArgument(f"{where} has unknown fields: {', '.join(unknown)}")
        try:
            times = {field: parse_instant(record.get(field), f"{where}.{field}") for field in TIME_FIELDS}
            request = WriteRequest(
                content=check_content(record.get("content"), limits),
                subject=check_author(record.get("source"), principal.subject),
                importer=principal.subject,
                namespace=namespace,
                kind=check_kind(record.get("kind", "episodic")).value,
                importance=check_importance(record.get("importance")),
                tags=check_tags(record.get("tags"), limits),
                session_id=check_session_id(record.get("session_id")),
                occurred_at=times["created_at"],
                metadata=check_json_object(record.get("metadata"), limits.max_metadata_bytes, "metadata"),
                tool="import_memories",
                skip_deleted_repeats=True,
                imported=True,
                deleted_at=times["deleted_at"],  # a record exported as forgotten is stored forgotten, in one step
                delete_reason=check_reason(
                    record.get("delete_reason"), times["deleted_at"] is not None, "delete_reason", "imported as deleted"
                ),
                archived_at=times["archived_at"],  # and one exported as archived is stored archived
                archive_reason=check_reason(
                    record.get("archive_reason"),
                    times["archived_at"] is not None,
                    "archive_reason",
                    "imported as archived",
                ),
            )
        except InvalidArgument as exc:
            message = exc.message if exc.message.startswith(where) else f"{where}: {exc.message}"
            raise InvalidArgument(message) from None
        checked.append(request)
    return checked


async def import_records(
    rt: Runtime, principal: Principal, scope: NamespaceScope, namespace: str, records: list[dict[str, Any]]
) -> ImportAnswer:
    """Write exported records into `namespace` through the normal write path; repeats are skipped."""
    imported, skipped = 0, 0
    for request in check_records(records, principal, namespace, rt.memories.limits):
        outcome = await rt.memories.write(scope, request)
        if outcome.status is WriteStatus.CREATED:
            imported += 1
        else:
            skipped += 1
    return {"status": "imported", "namespace": namespace, "imported": imported, "skipped": skipped}


ADMIN = {SCOPE_META: SCOPE_ADMIN}  # `_meta` of a tool only an admin token may list and call


def register_admin_tools(server: MCPServer) -> None:
    admin_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    destructive = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

    @server.tool(annotations=admin_only, meta=ADMIN)
    async def export_memories(
        namespace: AdminNamespace,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ExportAnswer:
        """Admin: export a namespace's memories (forgotten and archived too) as records for import_memories, a
        page at a time."""
        call = current_call()
        page = await call.runtime.memories.list(
            call.scope, ListRequest(namespace=namespace, include_deleted=True, limit=limit, cursor=cursor)
        )
        return {"records": [memory_json(m) for m in page.memories], "next_cursor": page.next_cursor}

    @server.tool(annotations=destructive, meta=ADMIN)
    async def import_memories(
        namespace: AdminNamespace,
        records: Annotated[list[dict[str, Any]], Field(description="From export_memories.")],
        request_id: str | None = None,
    ) -> ImportAnswer:
        """Admin: import export_memories records into a namespace, re-embedded; repeats are skipped."""
        call = current_call()
        return await import_records(call.runtime, call.principal, call.scope, namespace, records)

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False), meta=ADMIN
    )
    async def consolidate(
        namespace: Annotated[str | None, Field(description="Omit for all.")] = None,
        request_id: str | None = None,
    ) -> ConsolidateAnswer:
        """Admin: merge related episodic memories into semantic ones now (it also runs on a schedule)."""
        call = current_call()
        result = await consolidate_now(call.runtime.memories, call.scope, namespace, call.runtime.summarizer)
        return {"status": "consolidated", "clusters": result.clusters, "written": result.written}

    @server.tool(annotations=destructive, meta=ADMIN)
    async def purge_namespace(
        namespace: AdminNamespace,
        confirm: Annotated[str, Field(description="The namespace again.")],
        request_id: str | None = None,
    ) -> PurgeAnswer:
        """Admin: permanently erase a namespace from every store (memories, their copies, events, working memory,
        recall log, stored answers); answers a receipt. Irreversible."""
        if confirm != namespace:
            raise InvalidArgument("confirm must repeat the namespace name exactly")
        call = current_call()
        return await purge_everywhere(call.runtime, call.principal, call.scope, namespace)
