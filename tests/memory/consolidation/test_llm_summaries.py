"""Consolidation with an LLM: summaries come from an OpenAI-compatible chat API (a real chat server on a free
port, `tests/chat_server.py`, standing in for the external LLM), and consolidation falls back to the extractive
statement of the rules when the LLM is down or too slow."""

from __future__ import annotations

import pytest

from memory.consolidation import ConsolidationPolicy, consolidate
from memory.llm import ChatClient, ChatConfig, ChatSummarizer
from memory.models import MemoryKind
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from tests.chat_server import ChatRequest, ChatServer
from tests.redis_server import free_port

pytestmark = pytest.mark.anyio

COFFEE = (
    "The user drinks a double espresso every morning",
    "The user likes espresso with no sugar in the morning",
    "Every morning the user orders an espresso",
)


def merged(request: ChatRequest) -> str:
    return f"Merged {len(request.prompt.splitlines())} statements."


async def write_coffee(service: MemoryService, who: NamespaceScope) -> None:
    for text in COFFEE:
        await service.write(who, WriteRequest(content=text, subject="t", namespace="user:1"))


async def test_consolidation_uses_the_llm_summary_when_configured(
    service: MemoryService, admin: NamespaceScope, chat_server: ChatServer
) -> None:
    chat_server.reply = merged
    await write_coffee(service, admin)
    async with ChatClient(ChatConfig(base_url=chat_server.url, model="small", api_key="k-1")) as chat:
        result = await consolidate(service, admin, "user:1", summarizer=ChatSummarizer(chat))
    [semantic_id] = result.written
    semantic = await service.get(admin, semantic_id)
    assert semantic.kind is MemoryKind.SEMANTIC
    assert semantic.content == "Merged 3 statements. (3 mentions, Jan 2026)"  # the rules' evidence appended
    assert semantic.metadata["summary"] == "llm"
    [request] = chat_server.requests
    assert request.path == "/v1/chat/completions" and request.authorization == "Bearer k-1"
    assert request.body["model"] == "small"
    assert all(text in request.prompt for text in COFFEE)


async def test_consolidation_falls_back_to_the_rules_when_the_llm_is_down(
    service: MemoryService, admin: NamespaceScope
) -> None:
    await write_coffee(service, admin)
    config = ChatConfig(base_url=f"http://127.0.0.1:{free_port()}", model="small", attempts=2, timeout_seconds=1)
    async with ChatClient(config) as chat:
        result = await consolidate(service, admin, "user:1", summarizer=ChatSummarizer(chat))
    [semantic_id] = result.written
    semantic = await service.get(admin, semantic_id)
    assert semantic.metadata["summary"] == "rules"
    assert semantic.content.startswith("The user has a regular habit involving") and "espresso" in semantic.content


async def test_consolidation_falls_back_to_the_rules_when_the_llm_does_not_answer_in_time(
    service: MemoryService, admin: NamespaceScope, chat_server: ChatServer
) -> None:
    chat_server.stall()  # the request is received and never answered
    await write_coffee(service, admin)
    policy = ConsolidationPolicy(llm_timeout_seconds=0.5)
    async with ChatClient(ChatConfig(base_url=chat_server.url, model="small", attempts=1, timeout_seconds=30)) as chat:
        result = await consolidate(service, admin, "user:1", policy=policy, summarizer=ChatSummarizer(chat))
    [semantic_id] = result.written
    semantic = await service.get(admin, semantic_id)
    assert semantic.metadata["summary"] == "rules" and "espresso" in semantic.content
    assert len(chat_server.requests) == 1  # it was asked, and the consolidation did not wait for it
