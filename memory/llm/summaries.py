"""`ChatSummarizer`: consolidation's optional abstractive summaries, one statement for a cluster of memories.

Consolidation falls back to its rule-based statement (`memory.consolidation.statements`) whenever `summarise` raises
`BackendUnavailable` or takes longer than the policy's `llm_timeout_seconds`, so it never depends on the LLM being
up; it appends the evidence ("(3 mentions, Jan-Mar 2026)") to the LLM's statement itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.llm.client import ChatClient

SYSTEM_PROMPT = (
    "You consolidate an assistant's memories. Given related statements about a user or their work, write one "
    "short, self-contained general statement of what they keep saying: a preference, a habit, the tools they use, "
    "a person or pet, a place (e.g. 'The user prefers concise answers'). Keep names, numbers and versions; write "
    "in the language of the statements; do not count the mentions or give dates. Answer with the statement only."
)


class ChatSummarizer:
    def __init__(self, chat: ChatClient) -> None:
        self.chat = chat  # not owned: whoever made the client closes it

    async def summarise(self, statements: Sequence[str]) -> str:
        """One consolidated statement for `statements`."""
        return await self.chat.complete(SYSTEM_PROMPT, "\n".join(f"- {s}" for s in statements))
