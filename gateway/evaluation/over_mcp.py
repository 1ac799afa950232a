"""The LoCoMo evaluation the way a deployed gateway sees it: every turn written with `write_memory` (a
`request_id` per turn, `occurred_at` set), every question asked with `recall_memory` through a real MCP client,
on the system clock (the questions are asked now, so a time-bound turn from 2023 is long expired, as it is
for a real user importing history), in each turn format of `gateway.evaluation.formats`.

`McpEvaluation.run` takes a connected `mcp.Client` (to `create_app(settings)` in process, or to a running
gateway with a token that may write the evaluation's namespaces, e.g. `memory:admin`) and the embedder the
dense baseline uses. What each turn became is read back with `list_memories(include_deleted=True)`: skipped,
merged in place, superseded, expired or forgotten. Nothing here reaches into the engine."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp import Client
from mcp_types import CallToolResult

from gateway.cli.errors import tool_error
from gateway.evaluation.formats import TurnFormat
from gateway.evaluation.locomo import Conversation
from gateway.evaluation.results import (
    Baselines,
    EvalReport,
    TurnStates,
    hidden_state,
    new_report,
    ranked_dia_ids,
    tally_conversation,
)
from memory.ports import Embedder

Progress = Callable[[int, int], None]
Now = Callable[[], datetime]
LIST_PAGE = 200
_UNSAFE = re.compile(r"[^a-z0-9]+")


class EvaluationFailed(RuntimeError):
    """A tool call of the evaluation answered an error (the gateway's code and message)."""


def _system_now() -> datetime:
    return datetime.now(UTC)


def _instant(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def slug(text: str) -> str:
    return _UNSAFE.sub("-", text.lower()).strip("-")


@dataclass(frozen=True, slots=True)
class McpEvaluation:
    client: Client
    embedder: Embedder  # the dense baseline's; the same model as the gateway's for a fair comparison
    run_tag: str = "eval"  # namespaces and request ids of this run: a rerun on one gateway starts afresh
    top_k: int = 10
    now: Now = _system_now

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: CallToolResult = await self.client.call_tool(tool, arguments)
        body: dict[str, Any] | None = result.structured_content
        if result.is_error or body is None:
            code, message = tool_error(result)  # a tool error's code and message are in its text
            raise EvaluationFailed(f"{tool}: {code}: {message}")
        return body

    def namespace(self, fmt: TurnFormat, conversation: Conversation) -> str:
        return slug(f"locomo-{self.run_tag}-{fmt.name}-{conversation.sample_id}")[:128]

    async def ingest(self, fmt: TurnFormat, conversation: Conversation, namespace: str) -> TurnStates:
        states = TurnStates()
        for turn in conversation.turns:
            answer = await self.call(
                "write_memory",
                {
                    "content": fmt.text(turn),
                    "namespace": namespace,
                    "occurred_at": turn.occurred_at.isoformat(),
                    "session_id": f"session-{turn.session}",
                    "metadata": {"dia_id": turn.dia_id, "speaker": turn.speaker},
                    "request_id": f"{namespace}:{turn.dia_id}"[:128],
                },
            )
            if answer["id"] is None:
                states.skipped(turn.dia_id)
            else:
                states.stored(turn.dia_id, str(answer["id"]), updated=answer["status"] == "updated")
        return states

    async def classify(self, namespace: str, states: TurnStates) -> None:
        """Every memory of the namespace, hidden ones included, and why each is hidden now (if it is)."""
        now = self.now()
        found: dict[str, str | None] = {}
        cursor: str | None = None
        while True:
            arguments: dict[str, Any] = {"namespace": namespace, "include_deleted": True, "limit": LIST_PAGE}
            if cursor is not None:
                arguments["cursor"] = cursor
            page = await self.call("list_memories", arguments)
            for m in page["memories"]:
                found[str(m["id"])] = hidden_state(
                    deleted_at=_instant(m.get("deleted_at")),
                    superseded_by=m.get("superseded_by"),
                    expires_at=_instant(m.get("expires_at")),
                    now=now,
                )
            cursor = page.get("next_cursor")
            if cursor is None:
                break
        missing = states.classify(found)
        if missing:  # every state must be listed, or the hidden counts would be short
            raise EvaluationFailed(
                f"list_memories(include_deleted) of {namespace} lacks {len(missing)} written memories"
            )

    async def recall(self, namespace: str, question: str) -> tuple[list[str], float]:
        started = time.perf_counter()
        answer = await self.call("recall_memory", {"query": question, "namespaces": [namespace], "top_k": self.top_k})
        return [str(m["id"]) for m in answer["memories"]], time.perf_counter() - started

    async def run_format(
        self, fmt: TurnFormat, conversations: Sequence[Conversation], progress: Progress | None = None
    ) -> EvalReport:
        started = time.perf_counter()
        report = new_report(fmt.name)
        total = sum(len(c.turns) + len(c.questions) for c in conversations)
        done = 0
        for c in conversations:
            namespace = self.namespace(fmt, c)
            states = await self.ingest(fmt, c, namespace)
            done += len(c.turns)
            if progress:
                progress(done, total)
            await self.classify(namespace, states)
            tally_conversation(report, c, states)
            baselines = Baselines(self.embedder, [t.dia_id for t in c.turns], [fmt.text(t) for t in c.turns])
            dia_ids_of = states.dia_ids_of()
            for q in c.questions:
                report.questions += 1
                memory_ids, elapsed = await self.recall(namespace, q.question)
                report.systems["hindsight"].add(q.category, ranked_dia_ids(memory_ids, dia_ids_of), q.evidence)
                report.systems["hindsight"].latencies.append(elapsed)
                await baselines.score(report, q, self.top_k)
                done += 1
                if progress:
                    progress(done, total)
        report.wall_seconds = time.perf_counter() - started
        return report

    async def run(
        self,
        formats: Sequence[TurnFormat],
        conversations: Sequence[Conversation],
        progress: Callable[[TurnFormat], Progress | None] | None = None,
    ) -> list[EvalReport]:
        """One report per format, each format in its own namespaces, one after the other."""
        return [await self.run_format(f, conversations, progress(f) if progress else None) for f in formats]
