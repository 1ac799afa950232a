"""The MemoryBank Chinese evaluation set: the chat histories of `memory_bank_cn.json` (15 simulated users, about
ten days each; MIT, read from beside the repository, never copied into it), their probing questions
(`probing_questions_cn.jsonl`), and the evidence turns of each question, labelled here by reading the histories
(`labels/memorybank_cn_evidence.jsonl`: ids only, "YYYY-MM-DD:index" of a day's exchanges).

Each user is one `Conversation`: one turn per exchange (the user's message and the companion's reply, as a chat
log keeps them, at noon UTC of its day plus one minute per index so turns keep their order), and one question per
probing question, its category the user's number (1-15: `mb-cn-01`...; names in `user_names`), so a report
breaks the figures down per user.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gateway.evaluation.locomo import Conversation, Question, Turn

HISTORIES = "memory_bank_cn.json"
QUESTIONS = "probing_questions_cn.jsonl"
EVIDENCE = Path(__file__).with_name("labels") / "memorybank_cn_evidence.jsonl"
COMPANION = "AI"


def turn_id(day: str, index: int) -> str:
    return f"{day}:{index}"


def exchange_text(query: str, response: str) -> str:
    """One exchange as a chat log keeps it: the user's message, then the companion's reply."""
    return f"{query.strip()}\n{COMPANION}: {response.strip()}" if response.strip() else query.strip()


def load(directory: Path, evidence: Path = EVIDENCE) -> list[Conversation]:
    """Every user with a probing question, in the order of the questions file."""
    histories = json.loads((directory / HISTORIES).read_text(encoding="utf-8"))
    labels: dict[tuple[str, int], tuple[str, ...]] = {}
    for line in evidence.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            labels[(row["user"], int(row["q"]))] = tuple(row["evidence"])
    conversations: list[Conversation] = []
    for line in (directory / QUESTIONS).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        [(user, asked)] = json.loads(line).items()
        turns: list[Turn] = []
        for session, (day, exchanges) in enumerate(sorted(histories[user]["history"].items()), 1):
            noon = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
            for index, exchange in enumerate(exchanges):
                text = exchange_text(exchange.get("query", ""), exchange.get("response", ""))
                if text:
                    turns.append(Turn(turn_id(day, index), user, text, session, noon + timedelta(minutes=index)))
        known = {t.dia_id for t in turns}
        category = len(conversations) + 1
        questions = []
        unresolved = 0
        for q, question in enumerate(asked):
            found = tuple(e for e in labels.get((user, q), ()) if e in known)
            unresolved += len(labels.get((user, q), ())) - len(found)
            if found:
                questions.append(Question(question, category, found))
        conversations.append(Conversation(f"mb-cn-{category:02d}", tuple(turns), tuple(questions), unresolved))
    return conversations


def user_names(directory: Path) -> dict[int, str]:
    """Category number (the conversation's `mb-cn-NN`) -> the user it stands for."""
    lines = [line for line in (directory / QUESTIONS).read_text(encoding="utf-8").splitlines() if line.strip()]
    return {i: next(iter(json.loads(line))) for i, line in enumerate(lines, 1)}
