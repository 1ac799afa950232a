"""The `feedback` tool (issue #18.3): an agent says which recalled memories it used and which it did not.

The engine checks the ids and bumps the used memories' access counts (`memory.feedback_use`); the tool counts
the report in `hindsight_recall_feedback_total{used}` (with the tenant when `HINDSIGHT_METRICS_TENANT_LABEL` is
on), whose used share is the recall hit ratio on the dashboard. It changes something, so it needs
`memory:write` and passes the boundary's idempotency: a retry with the same `request_id` is answered from the
first call and neither bumps nor counts again. Without one, each call is a new report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from mcp_types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from gateway.tool_support import current_call
from memory.feedback_use import MAX_FEEDBACK_IDS, record_use

if TYPE_CHECKING:
    from gateway.mcp_server import GatewayMCPServer

REPORTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
MemoryId = Annotated[str, Field(min_length=1, max_length=64)]


class FeedbackAnswer(TypedDict):
    used: Annotated[int, Field(description="Distinct memories recorded as used (their access counts bumped).")]
    unused: Annotated[int, Field(description="Distinct memories recorded as recalled but not used.")]


def register_feedback_tools(server: GatewayMCPServer) -> None:
    metrics = server.boundary.telemetry.metrics

    @server.tool(annotations=REPORTS)
    async def feedback(
        used: Annotated[
            list[MemoryId] | None,
            Field(
                max_length=MAX_FEEDBACK_IDS,
                description="Ids of recalled memories you used in your answer; they are recalled more readily later.",
            ),
        ] = None,
        unused: Annotated[
            list[MemoryId] | None,
            Field(max_length=MAX_FEEDBACK_IDS, description="Ids of recalled memories you did not use."),
        ] = None,
        request_id: Annotated[
            str | None,
            Field(
                description="Client-chosen id for this report (letters, digits, ':_.@-'): a retry with the same id "
                "counts once."
            ),
        ] = None,
    ) -> FeedbackAnswer:
        """After answering with memories from recall_memory, say which of them you used and which you did not
        (ids from the recall). Used memories rank higher in later recalls; the counts show whether recall finds
        what agents need. Pass a request_id so a retry counts once."""
        call = current_call()
        outcome = await record_use(call.runtime.memories, call.scope, used, unused)
        metrics.count_feedback(len(outcome.used), len(outcome.unused), call.principal.tenant)
        return {"used": len(outcome.used), "unused": len(outcome.unused)}
