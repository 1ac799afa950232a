"""`python -m bench.consolidation_quality [--quick] [--out PATH]`: do the semantic memories consolidation writes say
what a person would say about each user, without a flood, and without costing recall (issue #20)?

1. **MemoryBank, English and Chinese** (`memory_bank_{en,cn}.json`, read from beside the repository): every user's
   history is written through the real `MemoryService` of the runtime the server opens (embedded engine, the
   default embedder) on a `ManualClock`, one memory per exchange at its day (as `hindsight eval memorybank` writes
   it: the user's message and the companion's reply, speaker in metadata), into a namespace per user; then
   `consolidate` runs once. Reported: the share of the user's listed hobbies (and, apart, personality traits) that
   some semantic memory of theirs mentions, and the semantic memories written per user.

   **The matching rule.** A hobby ("playing the piano", "唱歌跳舞") is split into its key words: English words
   lowercased and stemmed (`memory.text.words.stem`), without stop words, activity verbs ("playing",
   "watching", "listening", "taking", "drinking", ...) and hyphenated modifiers ("long-distance"); Chinese jieba
   words without the leading activity verb ("听", "看", "玩", "打", "弹", "吃", "品"). It is covered when every key
   word (or a listed synonym: movie/film, 旅游/旅行, ...) occurs in one semantic memory (English: as a stemmed
   word; Chinese: as a substring). A trait is matched the same way. Nothing else counts: no embedding similarity.

2. **LoCoMo dev** (`locomo10-dev.json`): every conversation is written twice as `hindsight eval locomo` writes it
   (the plain format); one copy is consolidated. Every question is asked a day after the last turn in both
   (`top_k` 10); recall@10 of the gold evidence turns with and without semantic memories present. A semantic hit
   counts for no turn (it takes a slot), so the comparison is strict; the difference comes with its 95% paired
   bootstrap interval over the questions.

`--quick`: two users per language and the first three sessions of one LoCoMo conversation. Written to RESULTS.md as
its own section (`make bench` runs it too).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.config import settings_for
from bench.decision_set import DATASETS
from bench.procinfo import load_average
from bench.sections import stage_main
from bench.stats import paired_bootstrap_interval
from gateway.evaluation import locomo, memorybank
from gateway.evaluation.metrics import recall_at
from gateway.evaluation.results import ranked_dia_ids
from gateway.evaluation.runner import ASK_DELAY, ingest, recalled
from gateway.services.assembly import open_runtime
from memory.clock import ManualClock
from memory.consolidation import consolidate
from memory.models import MemoryKind
from memory.requests import ListRequest, RecallRequest, WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.text.words import STOPWORDS, stem
from ops.config import Settings
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, scope_for

BEGIN = "<!-- bench:consolidation-quality:begin -->"
END = "<!-- bench:consolidation-quality:end -->"
QUICK_HELP = "two MemoryBank users per language and three sessions of the first LoCoMo conversation"
HEADING = "## Consolidation: semantic memories a person would write, English and Chinese"
SUBJECT = "consolidation-eval"
TOP_K = 10
QUICK_USERS = 2
QUICK_SESSIONS = 3  # --quick: the first sessions of the first LoCoMo conversation
FLOOD = 10  # semantic memories per user above which consolidation floods
_EN_VERBS = {"play", "watch", "listen", "tak", "take", "drink", "eat", "go", "do", "studi", "study", "tast", "to"}
_ZH_VERBS = ("听", "看", "玩", "打", "弹", "吃", "品")
_SYNONYMS = {
    "movi": ("film", "cinema"),
    "film": ("movi", "cinema"),
    "travel": ("trip",),
    "work": ("fitness", "gym", "exercis"),
    "photography": ("photo", "photograph", "pictur"),
    "cod": ("program",),
    "旅游": ("旅行",),
    "旅行": ("旅游",),
    "电影": ("影片",),
    "阅读": ("读书", "看书"),
    "读书": ("阅读", "看书"),
}


@dataclass
class User:
    name: str
    hobbies: list[str]
    traits: list[str]
    turns: list[tuple[datetime, str]]


@dataclass
class UserResult:
    name: str
    hobbies: dict[str, bool]
    traits: dict[str, bool]
    semantic: list[str]


@dataclass
class Language:
    key: str
    users: list[UserResult] = field(default_factory=list)
    seconds: float = 0.0

    def share(self, what: str) -> float:
        found = [v for u in self.users for v in getattr(u, what).values()]
        return sum(found) / len(found) if found else 0.0

    def counted(self, what: str) -> str:
        found = [v for u in self.users for v in getattr(u, what).values()]
        return f"{sum(found) / len(found) if found else 0.0:.2f} ({sum(found)}/{len(found)})"

    def per_user(self) -> list[int]:
        return [len(u.semantic) for u in self.users]


@dataclass
class Figures:
    languages: list[Language]
    locomo_raw: float = 0.0
    locomo_consolidated: float = 0.0
    locomo_questions: int = 0
    locomo_semantic: int = 0
    locomo_conversations: int = 0
    locomo_examples: list[str] = field(default_factory=list)
    locomo_lost: int = 0  # questions whose recall@10 dropped with the semantic memories present
    locomo_won: int = 0
    locomo_displaced: int = 0  # questions that lost evidence with a semantic memory in their top 10
    locomo_differences: list[float] = field(default_factory=list)  # per question: with - without
    quick: bool = False
    load_before: str = ""
    load_after: str = ""
    seconds: float = 0.0


def _split(listing: str) -> list[str]:
    parts = re.split(r"[,，、;；]|\band\b|\s和", listing)
    return [p.strip().strip(".").strip() for p in parts if p.strip().strip(".").strip()]


def load_users(lang: str, root: Path = DATASETS) -> list[User]:
    data = json.loads((root / "memorybank" / f"memory_bank_{lang}.json").read_text(encoding="utf-8"))
    users: list[User] = []
    for raw_name, person in data.items():
        meta = person["meta_information"]
        turns: list[tuple[datetime, str]] = []
        for day, exchanges in sorted(person["history"].items()):
            noon = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
            for index, exchange in enumerate(exchanges):
                text = memorybank.exchange_text(exchange.get("query", ""), exchange.get("response", ""))
                if text:
                    turns.append((noon + timedelta(minutes=index), text))
        users.append(User(raw_name.strip(), _split(meta["hobbies"]), _split(meta["personality"]), turns))
    return users


def _english_keys(item: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z][a-z-]*", item.lower()) if "-" not in w]
    keys = [stem(w) for w in words if w not in STOPWORDS and stem(w) not in _EN_VERBS]
    return keys or [stem(w) for w in words]


def _chinese_keys(item: str) -> list[str]:
    import jieba

    words = [w for w in jieba.lcut(item) if w.strip()]
    if len(words) > 1 and words[0] in _ZH_VERBS:
        words = words[1:]
    return words


def covered(item: str, contents: Sequence[str], zh: bool) -> bool:
    """The matching rule of the module docstring: every key word of `item` (or a synonym) in one semantic memory."""
    keys = _chinese_keys(item) if zh else _english_keys(item)
    for content in contents:
        present = content if zh else " ".join(stem(w) for w in re.findall(r"[a-z]+", content.lower()))
        words = set() if zh else set(present.split())

        def has(key: str, present: str = present, words: set[str] = words) -> bool:
            return key in present if zh else key in words

        if all(has(k) or any(has(s) for s in _SYNONYMS.get(k, ())) for k in keys):
            return True
    return False


async def _semantic(service: MemoryService, scope: NamespaceScope, namespace: str) -> list[str]:
    page = await service.list(scope, ListRequest(namespace=namespace, kind="semantic", limit=100))
    return [m.content for m in page.memories]


async def _user(
    service: MemoryService, scope: NamespaceScope, clock: ManualClock, lang: str, index: int, user: User
) -> UserResult:
    namespace = f"cq-{lang}-{index:02d}"
    for at, text in user.turns:
        clock.set(at)
        await service.write(
            scope,
            WriteRequest(
                content=text,
                subject=SUBJECT,
                namespace=namespace,
                occurred_at=at,
                session_id=at.date().isoformat(),
                metadata={"speaker": user.name},
                tool="eval",
            ),
        )
    clock.set(user.turns[-1][0] + ASK_DELAY)
    await consolidate(service, scope, namespace)
    contents = await _semantic(service, scope, namespace)
    zh = lang == "cn"
    return UserResult(
        user.name,
        {h: covered(h, contents, zh) for h in user.hobbies},
        {t: covered(t, contents, zh) for t in user.traits},
        contents,
    )


async def _locomo(
    service: MemoryService, scope: NamespaceScope, clock: ManualClock, figures: Figures, quick: bool
) -> None:
    conversations = locomo.load(DATASETS / "locomo" / "locomo10-dev.json")
    if quick:  # the first sessions of the first conversation
        first = conversations[0]
        conversations = [locomo.first_sessions(first, QUICK_SESSIONS)]
    raw_sum = consolidated_sum = 0.0
    for conversation in conversations:
        plain = await ingest(service, scope, clock, conversation)
        renamed = replace(conversation, sample_id=conversation.sample_id + "-c")
        with_semantic = await ingest(service, scope, clock, renamed)
        clock.set(conversation.turns[-1].occurred_at + timedelta(hours=1))
        result = await consolidate(service, scope, with_semantic.namespace)
        figures.locomo_semantic += len(result.written)
        figures.locomo_examples += (await _semantic(service, scope, with_semantic.namespace))[:2]
        clock.set(conversation.turns[-1].occurred_at + ASK_DELAY)
        for q in conversation.questions:
            ranked, _ = await recalled(service, scope, plain, q.question, TOP_K)
            without = recall_at(ranked, q.evidence, TOP_K)
            request = RecallRequest(query=q.question, namespaces=[with_semantic.namespace], top_k=TOP_K)
            hits = await service.recall(scope, request)
            await service.drain()  # as `recalled` does: the access-count bumps land before the next question
            ranked = ranked_dia_ids([h.memory.id for h in hits], with_semantic.states.dia_ids_of())
            present = recall_at(ranked, q.evidence, TOP_K)
            raw_sum, consolidated_sum = raw_sum + without, consolidated_sum + present
            figures.locomo_differences.append(present - without)
            figures.locomo_lost += present < without
            if present < without and any(h.memory.kind is MemoryKind.SEMANTIC for h in hits):
                figures.locomo_displaced += 1
            figures.locomo_won += present > without
        figures.locomo_questions += len(conversation.questions)
        figures.locomo_conversations += 1
    if figures.locomo_questions:
        figures.locomo_raw = raw_sum / figures.locomo_questions
        figures.locomo_consolidated = consolidated_sum / figures.locomo_questions


def _settings(data_dir: Path) -> Settings:
    return settings_for(data_dir).replaced(memory_maintenance_interval_seconds=0)


async def measure(quick: bool = False, workdir: Path | None = None) -> Figures:
    started = time.perf_counter()
    principal = Principal(subject=SUBJECT, tenant="eval", scopes=frozenset({SCOPE_READ, SCOPE_WRITE, SCOPE_ADMIN}))
    scope = scope_for(principal)
    clock = ManualClock(datetime(2023, 1, 1, tzinfo=UTC))
    figures = Figures([], quick=quick, load_before=load_average())
    with tempfile.TemporaryDirectory(prefix="hindsight-consolidation-", dir=workdir) as tmp:
        async with open_runtime(_settings(Path(tmp) / "data"), clock) as rt:
            for lang in ("en", "cn"):
                language = Language(lang)
                began = time.perf_counter()
                for index, user in enumerate(load_users(lang)[: QUICK_USERS if quick else None]):
                    language.users.append(await _user(rt.memories, scope, clock, lang, index, user))
                language.seconds = time.perf_counter() - began
                figures.languages.append(language)
            await _locomo(rt.memories, scope, clock, figures, quick)
    figures.load_after = load_average()
    figures.seconds = time.perf_counter() - started
    return figures


def render(figures: Figures) -> str:
    label = {"en": "English", "cn": "Chinese"}
    lines = [
        BEGIN,
        HEADING,
        "",
        f"`python -m bench.consolidation_quality{' --quick' if figures.quick else ''}` (default embedder, rules, no "
        f"LLM; {figures.seconds:.0f} s; load average before {figures.load_before}, after {figures.load_after}). "
        "MemoryBank: one namespace per user, one memory per exchange, one `consolidate`; a hobby or trait is "
        "covered when all its key words (stemmed English words, Chinese jieba words without the leading verb, or "
        "a listed synonym) occur in one of the user's semantic memories (`bench/consolidation_quality.py`).",
        "",
        "| language | users | hobbies covered | traits covered | semantic memories per user (mean / max) |",
        "|---|---:|---:|---:|---:|",
    ]
    for lang in figures.languages:
        counts = lang.per_user() or [0]
        lines.append(
            f"| {label[lang.key]} | {len(lang.users)} | {lang.counted('hobbies')} | {lang.counted('traits')} | "
            f"{sum(counts) / len(counts):.1f} / {max(counts)} |"
        )
    delta = figures.locomo_consolidated - figures.locomo_raw
    low, high = paired_bootstrap_interval(figures.locomo_differences)
    lines += [
        "",
        f"LoCoMo dev ({figures.locomo_conversations} conversations, {figures.locomo_questions} questions, top 10): "
        f"recall@10 {figures.locomo_raw:.4f} without and {figures.locomo_consolidated:.4f} with "
        f"{figures.locomo_semantic} semantic memories present ({delta:+.4f}, 95% paired bootstrap interval over the "
        f"questions {low:+.4f} to {high:+.4f}; a semantic hit counts for no turn; {figures.locomo_lost} questions "
        f"lost evidence from their top 10, {figures.locomo_displaced} of them with a semantic memory in it, "
        f"{figures.locomo_won} gained). The two namespaces hold the same turns; a question's ranking can also "
        "differ through the access counts of earlier recalls and the feedback terms of semantic candidates (BM25 "
        "statistics over a namespace leave consolidated memories out). For "
        "example: " + "; ".join(f"“{e[:140]}”" for e in figures.locomo_examples[:4]) + ".",
        "",
        "Missed hobbies, and a few statements written:",
        "",
    ]
    for lang in figures.languages:
        for user in lang.users[:15]:
            missed = [h for h, ok in user.hobbies.items() if not ok]
            shown = "; ".join(s[:110] for s in user.semantic[:3]) or "–"
            lines.append(f"- {label[lang.key]}, {user.name}: missed {', '.join(missed) or 'none'}. {shown}")
    lines.append(END)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(stage_main("consolidation_quality", __doc__, measure, render, BEGIN, END, quick_help=QUICK_HELP))
