"""The admin MCP tools of the recall log and the session debug view (issue 18, item 2): `recall_log` lists the
tenant's logged recalls newest first (only tenants in `recall_log_tenants` have any), `debug_session` answers
what `/debug/sessions/{id}` does (`gateway.tools.session_debug`). Both need `memory:admin` and read only the admin's
own tenant: every store is keyed by the scope's tenant."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field
from typing_extensions import TypedDict

from gateway.tools.boundary import ADMIN, READ_ONLY, current_call
from gateway.tools.recall_log import RecallLogEntryJson, entry_json
from gateway.tools.session_debug import SessionDebugAnswer, session_debug
from memory.validation import check_limit


class RecallLogAnswer(TypedDict):
    tenant: str
    logging: Annotated[bool, Field(description="Whether this tenant's recalls are being logged now.")]
    entries: list[RecallLogEntryJson]


def register_debug_tools(server: MCPServer) -> None:
    @server.tool(annotations=READ_ONLY, meta=ADMIN)
    async def recall_log(
        limit: int | None = None,
        session_id: str | None = None,
        subject: str | None = None,
    ) -> RecallLogAnswer:
        """Admin: this tenant's logged recalls, newest first, with their scored results (logged tenants
        only)."""
        call = current_call()
        runtime = call.runtime
        size = check_limit(limit if limit is not None else 50, runtime.memories.limits)
        entries = []
        if runtime.recall_log is not None:
            entries = await runtime.recall_log.entries(call.scope, limit=size, session_id=session_id, subject=subject)
        return {
            "tenant": call.scope.tenant,
            "logging": call.scope.tenant in runtime.settings.observability.recall_log_tenants,
            "entries": [entry_json(e) for e in entries],
        }

    @server.tool(annotations=READ_ONLY, meta=ADMIN)
    async def debug_session(
        session_id: str,
        namespace: str,
    ) -> SessionDebugAnswer:
        """Admin: all about one session: its record, events, working memory, extracted memories and
        recalls."""
        call = current_call()
        return await session_debug(call.runtime, call.scope, session_id, namespace)
