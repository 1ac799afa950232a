"""The operator's MCP tool `reembed`: start an embedding-model migration in the running gateway, follow it, and
drop the old index once the switch is done (`memory.reembed.migration`, built by `gateway.services.reembed`).

A migration concerns every tenant of the gateway, so a tenant's `memory:admin` is not enough: the tool needs the
scope `hindsight:operator` (`hindsight token --operator`), which no tenant grant implies.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from gateway.tools.boundary import SCOPE_META, current_call
from memory.errors import BackendUnavailable, InvalidArgument

SCOPE_OPERATOR = "hindsight:operator"  # gateway-wide operations, across tenants
OPERATOR = {SCOPE_META: SCOPE_OPERATOR}
MAX_WAIT_SECONDS = 600.0


class ReembedAnswer(TypedDict):
    state: Literal["idle", "running", "switched", "failed"]
    phase: str | None
    from_model: str | None
    to_model: str | None
    to_embedder: str | None
    started_at: str | None
    finished_at: str | None
    copied: int
    caught_up: int
    passes: int
    verified: int | None
    error: str | None
    old_indexes: list[str]
    dropped: list[str]


def register_reembed_tools(server: MCPServer) -> None:
    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False), meta=OPERATOR
    )
    async def reembed(
        action: Literal["start", "status", "drop_old"] = "status",
        to: Annotated[str | None, Field(description="The embedder to move to (start only).")] = None,
        wait_seconds: Annotated[
            float | None, Field(description="Wait this long for a running migration to end.", ge=0)
        ] = None,
        request_id: str | None = None,
    ) -> ReembedAnswer:
        """Operator: move every tenant's memories to another embedding model without downtime: start it,
        follow it with status, then drop_old."""
        reembedder = current_call().runtime.reembedder
        if reembedder is None:
            raise BackendUnavailable("the gateway is starting or stopping")
        dropped: list[str] = []
        if action == "start":
            if not to:
                raise InvalidArgument("start needs `to`: the embedder to move to")
            reembedder.start(to)
        elif to is not None:
            raise InvalidArgument("`to` is only for start")
        if action == "drop_old":
            dropped = await reembedder.drop_old()
        elif wait_seconds:
            await reembedder.wait(min(wait_seconds, MAX_WAIT_SECONDS))
        report = await reembedder.report()
        return {**report, "dropped": dropped}  # type: ignore[typeddict-item]
