"""Synthetic, reproducible memories and queries for the benchmark.

Memories read like what an agent stores: one statement about a person, a project, a preference or an event,
8 to 60 words (median 16, 5th-95th percentile 9-47, about 125 characters), built from templates and a few
hundred content words with a fixed seed, so every run embeds and searches the same text. Queries are questions
over the same vocabulary, drawn with another seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from memory.ids import content_hash, new_memory_id
from memory.models import Memory, MemoryKind, Source

TENANT = "bench"
NAMESPACE_COUNT = 100
WRITE_NAMESPACE = "bench:writes"
SUBJECT = "bench-loader"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

PEOPLE = (
    "the user",
    "Alice",
    "Bob",
    "Priya",
    "Chen",
    "Maria",
    "Tomasz",
    "Aisha",
    "Diego",
    "Yuki",
    "Lena",
    "Omar",
    "the manager",
    "the client",
    "the on-call engineer",
    "her sister",
    "his landlord",
    "the team lead",
    "the designer",
    "the accountant",
    "the doctor",
    "the new hire",
    "the product owner",
    "the vendor",
)
VERBS = (
    "prefers",
    "asked for",
    "decided on",
    "complained about",
    "booked",
    "cancelled",
    "moved",
    "bought",
    "recommended",
    "rejected",
    "scheduled",
    "finished",
    "started",
    "forgot",
    "mentioned",
    "approved",
    "postponed",
    "reviewed",
    "migrated",
    "renewed",
    "returned",
    "ordered",
    "shared",
    "deployed",
    "paid for",
)
ADJECTIVES = (
    "short",
    "detailed",
    "weekly",
    "quarterly",
    "urgent",
    "vegetarian",
    "remote",
    "quiet",
    "cheaper",
    "encrypted",
    "automated",
    "annual",
    "late",
    "early",
    "shared",
    "private",
    "refurbished",
    "spicy",
    "blue",
    "open-source",
    "managed",
    "legacy",
    "new",
    "second",
    "final",
    "hybrid",
    "international",
)
THINGS = (
    "answers",
    "standup meeting",
    "flight to Lisbon",
    "dentist appointment",
    "database backup",
    "laptop",
    "Kubernetes cluster",
    "subscription",
    "apartment lease",
    "birthday dinner",
    "budget report",
    "deploy pipeline",
    "train tickets",
    "insurance policy",
    "marketing plan",
    "pull request",
    "invoice",
    "gym membership",
    "vacation in Japan",
    "API keys",
    "design review",
    "performance review",
    "car repair",
    "wedding invitation",
    "cloud bill",
    "support ticket",
    "hiking trip",
    "piano lessons",
    "tax return",
    "conference talk",
    "grocery order",
    "dark mode",
    "release notes",
    "onboarding checklist",
    "coffee beans",
    "running shoes",
    "team offsite",
    "data migration",
    "password manager",
    "phone plan",
    "book club",
    "postgres upgrade",
    "mortgage",
    "hotel room",
    "sprint planning",
    "customer demo",
    "garden project",
)
PLACES = (
    "in Berlin",
    "at the office",
    "from home",
    "in the shared drive",
    "on AWS eu-west-1",
    "at the clinic",
    "in the Slack channel",
    "near the station",
    "in the staging cluster",
    "at the café downstairs",
    "in Notion",
    "over email",
    "on the calendar",
    "in the monorepo",
    "at the airport",
    "in Madrid",
)
TIMES = (
    "on Monday",
    "last week",
    "yesterday",
    "in March",
    "before the deadline",
    "after lunch",
    "next Friday",
    "every morning",
    "at the end of the quarter",
    "two days ago",
    "over the weekend",
    "in the evening",
    "this month",
    "since January",
    "before the holidays",
    "at 9 am",
)
REASONS = (
    "because the old one kept failing",
    "since it was too expensive",
    "to save time in the mornings",
    "after a long discussion with the team",
    "because the doctor recommended it",
    "so that nobody is blocked",
    "to keep costs under the agreed budget",
    "because the previous vendor was unreliable",
    "as the contract requires it",
    "so the family can join",
    "because latency matters to customers",
    "to avoid another outage like the one in February",
    "since the kids start school then",
)
EXTRAS = (
    "and wants a reminder the day before",
    "and said the price was fine",
    "but only if it stays under 200 euros",
    "and asked to keep it private",
    "and will confirm by email",
    "and expects a follow-up next week",
    "and shared the link in the channel",
    "while travelling for work",
    "together with two colleagues",
    "and noted that the first attempt failed",
    "and prefers not to be called about it",
    "and wrote down the confirmation number",
    "with a note to check the receipts",
)
TEMPLATES = (
    "{who} {verb} the {adj} {thing} {place} {time}.",
    "{who} {verb} the {thing} {time} {reason}.",
    "{time}, {who} {verb} a {adj} {thing} {place}.",
    "Note: {who} {verb} the {adj} {thing} {reason}.",
    "{who} {verb} the {thing} {place}.",
)
QUESTIONS = (
    "What did {who} say about the {thing}?",
    "When is the {adj} {thing}?",
    "Why did {who} {verb} the {thing}?",
    "Does {who} prefer the {adj} {thing}?",
    "What happened with the {thing} {place}?",
    "Remind me what we know about the {thing} and the {thing2}.",
)


def _fill(rng: random.Random, template: str) -> str:
    thing, thing2 = rng.sample(THINGS, 2)
    return template.format(
        who=rng.choice(PEOPLE),
        verb=rng.choice(VERBS),
        adj=rng.choice(ADJECTIVES),
        thing=thing,
        thing2=thing2,
        place=rng.choice(PLACES),
        time=rng.choice(TIMES),
        reason=rng.choice(REASONS),
    )


def _capitalized(text: str) -> str:
    return text[0].upper() + text[1:]


def sentence(rng: random.Random) -> str:
    """One memory statement of 8-60 words: a main clause and 0-4 extra clauses or follow-up sentences."""
    text = _capitalized(_fill(rng, rng.choice(TEMPLATES)))
    extra_clauses = min(4, int(rng.expovariate(0.7)))
    for _ in range(extra_clauses):
        if rng.random() < 0.5:
            text = text[:-1] + " " + rng.choice(EXTRAS) + "."
        else:
            text = text + " " + _capitalized(_fill(rng, rng.choice(TEMPLATES)))
    return text


def query(rng: random.Random) -> str:
    return _fill(rng, rng.choice(QUESTIONS))


def namespaces() -> list[str]:
    return [f"user:{i:03d}" for i in range(NAMESPACE_COUNT)]


def queries(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [query(rng) for _ in range(count)]


def unique_sentences(count: int, seed: int, tag: str) -> list[str]:
    """`count` distinct statements, distinct from every other `tag`'s (writes must not be skipped as repeats)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        text = sentence(rng)
        if text not in seen:
            seen.add(text)
            out.append(f"{text} (ref {tag}-{len(out)})")
    return out


@dataclass
class CorpusGenerator:
    """Memory `i` of the corpus, for any `i`, in order: namespace `i mod 100`, fixed seed."""

    seed: int = 42

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._meta_rng = random.Random(self.seed + 1)
        self._next = 0
        self._namespaces = namespaces()

    @property
    def produced(self) -> int:
        return self._next

    def texts(self, count: int) -> list[str]:
        return [sentence(self._rng) for _ in range(count)]

    def memories(self, texts: list[str], embedding_model: str) -> Iterator[Memory]:
        rng = self._meta_rng
        for text in texts:
            index = self._next
            self._next += 1
            created = EPOCH - timedelta(minutes=rng.randrange(0, 180 * 24 * 60))
            episodic = rng.random() < 0.7
            memory = fresh_memory(
                TENANT,
                self._namespaces[index % NAMESPACE_COUNT],
                text,
                created,
                source=Source(subject=SUBJECT, request_id=None, tool="bench"),
                embedding_model=embedding_model,
            )
            yield replace(
                memory,
                kind=MemoryKind.EPISODIC if episodic else MemoryKind.SEMANTIC,
                importance=round(rng.uniform(0.1, 0.9), 2),
                session_id=f"s-{index // 40}" if episodic else None,
                tags=rng.sample(("work", "home", "travel", "health", "money", "family", "infra"), rng.randint(0, 2)),
            )


def fresh_memory(
    tenant: str, namespace: str, content: str, created: datetime, *, source: Source, embedding_model: str
) -> Memory:
    """An episodic memory as a store first holds it, of middling importance, in no session and untagged: never
    read, expiring, deleted, superseded or shared; its id from its creation time, its hash from its content."""
    return Memory(
        id=new_memory_id(int(created.timestamp() * 1000)),
        tenant=tenant,
        namespace=namespace,
        kind=MemoryKind.EPISODIC,
        content=content,
        importance=0.5,
        created_at=created,
        updated_at=created,
        last_accessed_at=None,
        access_count=0,
        expires_at=None,
        deleted_at=None,
        supersedes=[],
        superseded_by=None,
        origin_id=None,
        session_id=None,
        source=source,
        tags=[],
        metadata={},
        embedding_model=embedding_model,
        content_hash=content_hash(content),
    )


def word_count_summary(sample: list[str]) -> tuple[int, int, int]:
    """Median, 5th and 95th percentile word counts of `sample`."""
    counts = sorted(len(t.split()) for t in sample)
    return counts[len(counts) // 2], counts[len(counts) // 20], counts[len(counts) * 19 // 20]
