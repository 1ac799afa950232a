"""Reading LoCoMo: conversations as dated turns, questions with normalised evidence turn ids.

The dataset lives outside the repository (`../shared/datasets/locomo/`); this module only parses it. How a
turn is written as a memory is the caller's choice (`formats.py`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_EVIDENCE = re.compile(r"D\s*(\d+)\s*:\s*(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)$")


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    occurred_at: datetime
    caption: str | None = None  # the caption of a photo shared with the turn (LoCoMo's `blip_caption`)


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    unresolved_evidence: int


def parse_session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw: object) -> list[str]:
    """Evidence ids as 'D<session>:<turn>' without leading zeros; malformed strings may hold several ids."""
    items = raw if isinstance(raw, list) else [raw]
    found: list[str] = []
    for item in items:
        for session, turn in _EVIDENCE.findall(str(item)):
            found.append(f"D{int(session)}:{int(turn)}")
    return list(dict.fromkeys(found))


def parse_conversation(sample: dict[str, Any]) -> Conversation:
    conversation = sample["conversation"]
    turns: list[Turn] = []
    sessions = sorted(int(m.group(1)) for key in conversation if (m := _SESSION_KEY.match(key)))
    for number in sessions:
        started = parse_session_time(conversation[f"session_{number}_date_time"])
        for index, raw in enumerate(conversation[f"session_{number}"]):
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    speaker=str(raw["speaker"]),
                    text=str(raw.get("text", "")),
                    session=number,
                    occurred_at=started + timedelta(seconds=index),  # keep turn order within a session
                    caption=str(raw["blip_caption"]) if raw.get("blip_caption") else None,
                )
            )
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    unresolved = 0
    for qa in sample["qa"]:
        evidence = normalise_evidence(qa.get("evidence", []))
        resolved = tuple(e for e in evidence if e in known)
        unresolved += len(evidence) - len(resolved)
        if resolved:
            questions.append(Question(str(qa["question"]), int(qa["category"]), resolved))
    return Conversation(str(sample["sample_id"]), tuple(turns), tuple(questions), unresolved)


def load(path: Path) -> list[Conversation]:
    samples = json.loads(path.read_text(encoding="utf-8"))
    return [parse_conversation(sample) for sample in samples]


def truncated(conversation: Conversation, turns: int) -> Conversation:
    """The conversation's first `turns` turns and the questions whose every evidence turn is among them."""
    kept = conversation.turns[:turns]
    known = {t.dia_id for t in kept}
    questions = tuple(q for q in conversation.questions if set(q.evidence) <= known)
    return replace(conversation, turns=kept, questions=questions)


def first_sessions(conversation: Conversation, sessions: int) -> Conversation:
    """The conversation's first `sessions` sessions and their questions (a benchmark's quick run)."""
    return truncated(conversation, sum(1 for t in conversation.turns if t.session <= sessions))
