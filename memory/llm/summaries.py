"""`ChatSummarizer`: consolidation's optional abstractive summaries, one statement for a cluster of memories.

Consolidation falls back to its extractive summary whenever `summarise` raises `BackendUnavailable`, so it never
depends on the LLM being up.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.llm.client import ChatClient

SYSTEM_PROMPT = (
    "You consolidate an assistant's memories. Given related statements about a user or their work, write one "
    "short, self-contained fact or preference that captures what they have in common. Keep names, numbers and "
    "dates. Answer with the statement only."
)


class ChatSummarizer:
    def __init__(self, chat: ChatClient) -> None:
        self.chat = chat  # not owned: whoever made the client closes it

    async def summarise(self, statements: Sequence[str]) -> str:
        """One consolidated statement for `statements`."""
        return await self.chat.complete(SYSTEM_PROMPT, "\n".join(f"- {s}" for s in statements))
