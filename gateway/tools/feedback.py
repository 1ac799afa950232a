"""The `feedback` tool (issue #18.3): an agent says which recalled memories it used and which it did not.

The engine checks the ids and bumps the used memories' access counts (`memory.recall.use_feedback`); the tool counts
the report in `hindsight_recall_feedback_total{used}` (with the tenant when `HINDSIGHT_METRICS_TENANT_LABEL` is
on), whose used share is the recall hit ratio on the dashboard. It changes something, so it needs
`memory:write` and passes the boundary's idempotency: a retry with the same `request_id` is answered from the
first call and neither bumps nor counts again. Without one, each call is a new report.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from gateway.tools.boundary import current_call
from memory.recall.use_feedback import record_use
from ops.metrics import Metrics

REPORTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


class FeedbackAnswer(TypedDict):
    used: Annotated[int, Field(description="Distinct memories recorded as used (their access counts bumped).")]
    unused: Annotated[int, Field(description="Distinct memories recorded as recalled but not used.")]


def register_feedback_tools(server: MCPServer, metrics: Metrics) -> None:
    @server.tool(annotations=REPORTS)
    async def feedback(
        used: list[str] | None = None,  # ids; the engine checks them (memory.recall.use_feedback)
        unused: list[str] | None = None,
        request_id: str | None = None,
    ) -> FeedbackAnswer:
        """After answering, say which recalled memories (ids) you used and which not."""
        call = current_call()
        outcome = await record_use(call.runtime.memories, call.scope, used, unused)
        metrics.count_feedback(len(outcome.used), len(outcome.unused), call.principal.tenant)
        return {"used": len(outcome.used), "unused": len(outcome.unused)}
