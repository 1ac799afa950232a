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
from gateway.answers.serialize import memory_json
from gateway.answers.shapes import ConsolidateAnswer, ExportAnswer, ImportAnswer, PurgeAnswer
from gateway.tools.boundary import ADMIN, current_call
from memory.consolidation import consolidate_now
from memory.errors import InvalidArgument
from memory.requests import ListRequest
from memory.transfer import import_records

AdminNamespace = str  # the namespace to act on, e.g. 'user:42' (docs/TOOLS.md: arguments described by name alone)


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
        imported, skipped = await import_records(
            call.runtime.memories, call.scope, call.principal.subject, namespace, records
        )
        return {"status": "imported", "namespace": namespace, "imported": imported, "skipped": skipped}

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
