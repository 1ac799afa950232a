"""How a caller writes a LoCoMo turn: the text it stores and what it passes beside the text.

The evaluation changes only the caller's format, never the engine. Every format sets `occurred_at` to the
turn's time (the session's start plus one second per turn, to keep the order) and keeps a shared photo's
caption as part of what was said ("[shared a photo: caption]"):

- `plain`: "Speaker: text", the turn as a chat log shows it.
- `header`: "[1:10 pm on 27 March, 2023] Speaker: text", the timestamp header agents commonly log turns with
  (LoCoMo's own session time format).
- `occurred_at`: the utterance alone, "text", as an agent writes a user's own messages into that user's
  namespace: the time is only in `occurred_at`, the speaker only in `metadata.speaker` (which the engine reads as
  the turn's speaker: `memory.recall.cues.speaker_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.evaluation.locomo import Turn


def locomo_time(turn: Turn) -> str:
    """The turn's time as LoCoMo writes a session's: '1:10 pm on 27 March, 2023'."""
    at = turn.occurred_at
    half = "am" if at.hour < 12 else "pm"
    return f"{at.hour % 12 or 12}:{at:%M} {half} on {at.day} {at:%B}, {at.year}"


def _said(turn: Turn) -> str:
    return turn.text + (f" [shared a photo: {turn.caption}]" if turn.caption else "")


@dataclass(frozen=True, slots=True)
class TurnFormat:
    name: str
    label: str
    definition: str
    render: Callable[[Turn], str]

    def text(self, turn: Turn) -> str:
        return self.render(turn)


PLAIN = TurnFormat("plain", "plain text", '"Speaker: text", `occurred_at` set', lambda t: f"{t.speaker}: {_said(t)}")
HEADER = TurnFormat(
    "header",
    "timestamp header",
    '"[1:10 pm on 27 March, 2023] Speaker: text", `occurred_at` set',
    lambda t: f"[{locomo_time(t)}] {t.speaker}: {_said(t)}",
)
OCCURRED_AT_ONLY = TurnFormat(
    "occurred_at",
    "occurred_at only",
    '"text" alone: the time only in `occurred_at`, the speaker only in `metadata.speaker`',
    _said,
)
FORMATS = (PLAIN, HEADER, OCCURRED_AT_ONLY)
BY_NAME = {f.name: f for f in FORMATS}
