"""Write pipeline step 3 with an LLM: when the caller gives no importance, a configured `ImportanceRater` (here the
chat-API one, talking to a real chat server on a free port that stands in for the LLM) rates it within a deadline;
a garbage answer, an error or no answer in time falls back to the rules, with the reason recorded, and the write
succeeds either way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.errors import BackendUnavailable
from memory.llm import ChatClient, ChatConfig, ChatImportanceRater, parse_rating
from memory.models import WriteOutcome, WriteStatus
from memory.pipeline import PIPELINE_KEY, for_embedder
from memory.pipeline import importance as rules
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore
from tests.chat_server import ChatServer
from tests.memory.conftest import scope

pytestmark = pytest.mark.anyio

FACT = "The user's daughter Mia is allergic to peanuts"


@pytest.fixture
def writer(acme: str) -> NamespaceScope:
    return scope(acme, read=["user:1"], write=["user:1"])


@pytest.fixture
async def chat(chat_server: ChatServer) -> AsyncIterator[ChatClient]:
    async with ChatClient(ChatConfig(base_url=chat_server.url, model="rater", api_key="k-1")) as client:
        yield client


def rated_service(
    store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, chat: ChatClient, timeout: float = 2.0
) -> MemoryService:
    pipeline = for_embedder(embedder.model_id, importance_llm_timeout_seconds=timeout)
    return MemoryService(store, embedder, clock, pipeline=pipeline, importance_rater=ChatImportanceRater(chat))


@pytest.fixture
def service(store: EdgeVectorStore, embedder: WordLlamaEmbedder, clock: ManualClock, chat: ChatClient) -> MemoryService:
    return rated_service(store, embedder, clock, chat)


def importance_notes(outcome: WriteOutcome) -> dict[str, Any]:
    notes: dict[str, Any] = outcome.memory.metadata[PIPELINE_KEY]["importance"]
    return notes


def by_rules(content: str) -> dict[str, Any]:
    verdict = rules.rate(content)
    return {"value": verdict.value, "rules": list(verdict.rules), "source": "rules"}


async def test_the_llms_rating_is_stored_and_recorded_as_its_source(
    service: MemoryService, writer: NamespaceScope, chat_server: ChatServer
) -> None:
    chat_server.reply = lambda request: "8"
    outcome = await service.write(writer, WriteRequest(content=FACT, subject="t"))
    stored = await service.get(writer, outcome.memory.id)
    assert outcome.status is WriteStatus.CREATED
    assert stored.importance == 0.8
    assert stored.metadata[PIPELINE_KEY]["importance"] == {"value": 0.8, "source": "llm"}
    [request] = chat_server.requests
    assert request.path == "/v1/chat/completions" and request.authorization == "Bearer k-1"
    assert request.body["model"] == "rater"
    assert request.prompt == FACT
    assert "1 to 10" in request.system


async def test_a_garbage_answer_falls_back_to_the_rules_with_the_reason(
    service: MemoryService, writer: NamespaceScope, chat_server: ChatServer
) -> None:
    chat_server.reply = lambda request: "This seems quite important to remember about the user."
    outcome = await service.write(writer, WriteRequest(content=FACT, subject="t"))
    notes = importance_notes(outcome)
    assert outcome.status is WriteStatus.CREATED
    assert outcome.memory.importance == by_rules(FACT)["value"]
    assert notes.pop("llm_error").startswith("LLM answered no rating")
    assert notes == by_rules(FACT)


async def test_a_server_error_falls_back_to_the_rules_with_the_reason(
    service: MemoryService, writer: NamespaceScope, chat_server: ChatServer
) -> None:
    chat_server.reply = lambda request: 500
    outcome = await service.write(writer, WriteRequest(content=FACT, subject="t"))
    notes = importance_notes(outcome)
    assert outcome.status is WriteStatus.CREATED
    assert notes.pop("llm_error") == "LLM API unavailable: HTTP 500"
    assert notes == by_rules(FACT)
    assert len(chat_server.requests) == 1  # no retries within the write's deadline


async def test_a_server_that_never_answers_falls_back_to_the_rules_at_the_deadline(
    store: EdgeVectorStore,
    embedder: WordLlamaEmbedder,
    clock: ManualClock,
    chat: ChatClient,
    writer: NamespaceScope,
    chat_server: ChatServer,
) -> None:
    chat_server.stall()  # released when the server stops at teardown
    service = rated_service(store, embedder, clock, chat, timeout=0.2)
    outcome = await service.write(writer, WriteRequest(content=FACT, subject="t"))
    notes = importance_notes(outcome)
    assert outcome.status is WriteStatus.CREATED
    assert notes.pop("llm_error") == "no answer within 0.2 s"
    assert notes == by_rules(FACT)
    assert len(chat_server.requests) <= 1  # never retried (on a loaded machine the one request may not have landed)
    assert (await service.get(writer, outcome.memory.id)).importance == by_rules(FACT)["value"]


async def test_explicit_importance_wins_and_the_llm_is_not_asked(
    service: MemoryService, writer: NamespaceScope, chat_server: ChatServer
) -> None:
    chat_server.reply = lambda request: "10"
    outcome = await service.write(writer, WriteRequest(content=FACT, subject="t", importance=0.3))
    assert outcome.memory.importance == 0.3
    assert "importance" not in outcome.memory.metadata.get(PIPELINE_KEY, {})
    assert chat_server.requests == []


async def test_chit_chat_the_density_filter_skips_is_not_sent_to_the_llm(
    service: MemoryService, writer: NamespaceScope, chat_server: ChatServer
) -> None:
    outcome = await service.write(writer, WriteRequest(content="ok thanks!", subject="t"))
    assert outcome.status is WriteStatus.SKIPPED
    assert importance_notes(outcome)["source"] == "rules"
    assert chat_server.requests == []


@pytest.mark.parametrize(
    ("answer", "importance"),
    [
        ("7", 0.7),
        (" 7.\n", 0.7),
        ("7/10", 0.7),
        ("Rating: 9 out of 10", 0.9),
        ("**10**", 1.0),
        ("1", 0.1),
        ("6.5", 0.65),
        ("0.35", 0.35),
        ("<think>It names a person and an allergy.</think>\n9", 0.9),
    ],
)
def test_a_rating_is_read_from_a_short_answer(answer: str, importance: float) -> None:
    assert parse_rating(answer) == pytest.approx(importance)


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "important",
        "between 6 and 8",
        "42",
        "-3",
        "I would rate this statement a 7 because it is a lasting fact",
    ],
)
def test_an_answer_without_one_rating_on_the_scale_is_refused(answer: str) -> None:
    with pytest.raises(BackendUnavailable):
        parse_rating(answer)
