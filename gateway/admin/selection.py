"""`select_memories`, `forget_selected_memories` and `erase_selected_memories`: the admin's view of
`memory.selection` and `memory.erasure` over MCP. One argument model,
`Criteria`, declares the selection for both tools (and is what its schema, its checks and the engine's
`Selection` come from)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from gateway.admin.erasure import erase_everywhere
from gateway.answers.serialize import memory_json
from gateway.answers.shapes import EraseAnswer, ForgetSelectedAnswer, SelectAnswer
from gateway.tools.boundary import SCOPE_META, current_call
from memory.errors import InvalidArgument
from memory.selection import Selection, forget_selected, select_page
from memory.selection.criteria import Scalar
from memory.selection.scan import MAX_SELECTED
from tenancy import SCOPE_ADMIN

ADMIN = {SCOPE_META: SCOPE_ADMIN}


class Criteria(BaseModel):
    """Which memories, across every namespace of the tenant: all the criteria given must hold."""

    model_config = ConfigDict(extra="forbid")

    written_by: str | None = Field(None, description="The subject that wrote them.")
    tag: str | None = None
    metadata_key: str | None = None
    metadata_value: Scalar | None = None

    def selection(self) -> Selection:
        return Selection(self.written_by, self.tag, self.metadata_key, self.metadata_value)


Limit = Annotated[int, Field(ge=1, le=MAX_SELECTED)]


def register_selection_tools(server: MCPServer) -> None:
    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False), meta=ADMIN)
    async def select_memories(criteria: Criteria, limit: Limit = 100, cursor: str | None = None) -> SelectAnswer:
        """Admin: the memories one subject wrote (or with a tag or metadata value) in every namespace, forgotten
        ones too, a page at a time; a page may be short and still have a next_cursor."""
        call = current_call()
        page = await select_page(call.runtime.memories, call.scope, criteria.selection(), cursor, limit)
        records = [memory_json(m) for m in page.memories]
        return {"records": records, "next_cursor": page.next_cursor, "scanned": page.scanned}

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False), meta=ADMIN
    )
    async def forget_selected_memories(
        criteria: Criteria, cursor: str | None = None, request_id: str | None = None
    ) -> ForgetSelectedAnswer:
        """Admin: forget (restorable) what select_memories selects, with its copies; call again with next_cursor
        until it is null."""
        call = current_call()
        report = await forget_selected(
            call.runtime.memories, call.scope, criteria.selection(), call.principal.subject, cursor
        )
        return {
            "status": "forgotten",
            "forgotten": dict(sorted(report.forgotten.items())),
            "already_forgotten": report.already,
            "next_cursor": report.next_cursor,
            "scanned": report.scanned,
        }

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False), meta=ADMIN
    )
    async def erase_selected_memories(
        criteria: Criteria,
        confirm: Annotated[str, Field(description="The first criterion's value again.")],
        request_id: str | None = None,
    ) -> EraseAnswer:
        """Admin: permanently erase what select_memories selects from every store (copies, what was consolidated
        from it, a subject's events, working memory, recall log, stored answers); answers a receipt. Irreversible."""
        selection = criteria.selection()
        if confirm != selection.first_value():
            raise InvalidArgument("confirm must repeat the first criterion's value (written_by, tag or metadata_value)")
        call = current_call()
        return {
            "status": "erased",
            "receipt": await erase_everywhere(call.runtime, call.principal, call.scope, selection),
        }
