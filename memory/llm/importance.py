"""`ChatImportanceRater`: the optional LLM of write pipeline step 3, rating how important a statement is to remember
(an `ImportanceRater`).

The model is asked for one whole number from 1 to 10; `parse_rating` reads it strictly (one number on the scale,
in a short answer) and maps it to 0..1 (n / 10). Anything else is a failure (`BackendUnavailable`), and the write
path falls back to the rules (`memory.pipeline.rating`). One attempt by default: the write path waits for the
answer under a short deadline, where a retry rarely fits.
"""

from __future__ import annotations

import re

from memory.errors import BackendUnavailable
from memory.llm.client import ChatClient

SYSTEM_PROMPT = (
    "You rate an assistant's memories. Given one statement about a user or their work, rate how important it is "
    "to remember for future conversations, from 1 to 10: 1-2 small talk or nothing worth keeping, 4-6 ordinary "
    "context, 7-8 lasting preferences, personal facts, decisions, deadlines and appointments, 9-10 what the user "
    "explicitly asks to be remembered. Answer with the number only."
)
MAX_TOKENS = 16
MAX_ANSWER_CHARS = 40  # a rating, perhaps with a word or two ("Rating: 7/10"); a sentence is not an answer

_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)  # reasoning models' preamble
_OUT_OF_TEN = re.compile(r"\s*(?:/|out\s+of)\s*10\b", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def parse_rating(answer: str) -> float:
    """The importance (0..1) an answer states: one number from 0 to 10 ("7", "7/10", "Rating: 7.5") divided by
    10, or a fraction from 0 to 1 written with a decimal point ("0.7"). No number, several numbers, a number off
    the scale or a long answer raise `BackendUnavailable`."""
    text = _THINKING.sub("", answer).strip()
    if len(text) > MAX_ANSWER_CHARS:
        raise BackendUnavailable(f"LLM answered no rating: {text[:MAX_ANSWER_CHARS]!r}...")
    out_of_ten = _OUT_OF_TEN.search(text) is not None
    numbers = _NUMBER.findall(_OUT_OF_TEN.sub("", text))
    if len(numbers) != 1:
        raise BackendUnavailable(f"LLM answered no rating: {text!r}")
    number = float(numbers[0])
    if not 0.0 <= number <= 10.0:
        raise BackendUnavailable(f"LLM rating off the scale: {text!r}")
    fraction = "." in numbers[0] and number <= 1.0 and not out_of_ten
    return min(1.0, max(0.0, number if fraction else number / 10.0))


class ChatImportanceRater:
    def __init__(self, chat: ChatClient, attempts: int = 1) -> None:
        self.chat = chat  # not owned: whoever made the client closes it
        self.attempts = attempts

    async def rate(self, content: str) -> float:
        """How important `content` is to remember, 0..1; `BackendUnavailable` when the LLM gives no rating."""
        answer = await self.chat.complete(SYSTEM_PROMPT, content, max_tokens=MAX_TOKENS, attempts=self.attempts)
        return parse_rating(answer)
