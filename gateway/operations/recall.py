"""`RecallArguments`: what a recall takes: the engine's request and how the caller wants the answer shown."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from gateway.operations.base import Kind, OperationArguments
from gateway.recall_answer import Detail, Format, Order, RecallView
from memory.requests import RecallRequest
from memory.validation import EngineLimits, check_token_budget

LOGGED = ("namespaces", "top_k", "kinds", "tags", "session_id", "since", "until", "token_budget", "format", "order")


class RecallArguments(OperationArguments):
    """A question or task to recall for (docs/TOOLS.md says what each field means)."""

    query: str
    namespaces: list[str] | None = None
    top_k: Annotated[int | None, Field(description="Default 8; with token_budget, as many as fit.")] = None
    kinds: list[Kind] | None = None
    tags: list[str] | None = None
    session_id: str | None = None
    since: str | None = None
    until: str | None = None
    token_budget: Annotated[int | None, Field(description="Max tokens of the text answered.")] = None
    include_superseded: bool = False
    include_archived: bool = False
    as_of: str | None = None
    detail: Annotated[Detail, Field(description="full: every field (ids too), as JSON.")] = "lean"
    explain: bool = False
    format: Format = "memories"
    order: Order = "score"

    def view(self, limits: EngineLimits) -> RecallView:
        """How the answer is shown (its token budget checked against `limits`)."""
        return RecallView(
            self.format, self.order, self.detail, self.explain, check_token_budget(self.token_budget, limits)
        )

    def request(self, view: RecallView) -> RecallRequest:
        """The engine's request (its token budget the one `view` checked)."""
        return self.engine_request(RecallRequest, token_budget=view.token_budget)

    def logged(self) -> dict[str, Any]:
        """The arguments a recall-log entry keeps (`gateway.tools.recall_log`)."""
        return {name: getattr(self, name) for name in LOGGED}
