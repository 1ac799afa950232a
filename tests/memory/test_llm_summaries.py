"""Consolidation with an LLM: summaries come from an OpenAI-compatible chat API (a small chat server on a free
port, standing in for the external LLM), and consolidation falls back to the extractive summary when the LLM is
down."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memory.consolidation import consolidate
from memory.llm import ChatConfig, ChatSummarizer
from memory.models import MemoryKind
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.service import MemoryService
from tests.memory.conftest import scope

pytestmark = pytest.mark.anyio

COFFEE = (
    "The user drinks a double espresso every morning",
    "The user likes espresso with no sugar in the morning",
    "Every morning the user orders an espresso",
)


@pytest.fixture
def chat_server() -> Iterator[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            statements = body["messages"][-1]["content"].count("\n- ") + 1
            answer = {"choices": [{"message": {"role": "assistant", "content": f"Merged {statements} statements."}}]}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}", "seen": seen}
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def admin(acme: str) -> NamespaceScope:
    return scope(acme, admin=True)


async def write_coffee(service: MemoryService, who: NamespaceScope) -> None:
    for text in COFFEE:
        await service.write(who, WriteRequest(content=text, subject="t", namespace="user:1"))


async def test_consolidation_uses_the_llm_summary_when_configured(
    service: MemoryService, admin: NamespaceScope, chat_server: dict[str, Any]
) -> None:
    await write_coffee(service, admin)
    llm = ChatSummarizer(ChatConfig(base_url=chat_server["url"], model="small", api_key="k-1"))
    try:
        result = await consolidate(service, admin, "user:1", summarizer=llm)
    finally:
        await llm.close()
    [semantic_id] = result.written
    semantic = await service.get(admin, semantic_id)
    assert semantic.kind is MemoryKind.SEMANTIC
    assert semantic.content == "Merged 3 statements."
    assert semantic.metadata["summary"] == "llm"
    [request] = chat_server["seen"]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-1"
    assert request["body"]["model"] == "small"
    assert all(text in request["body"]["messages"][-1]["content"] for text in COFFEE)


async def test_consolidation_falls_back_to_extractive_when_the_llm_is_down(
    service: MemoryService, admin: NamespaceScope
) -> None:
    await write_coffee(service, admin)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = ChatSummarizer(ChatConfig(base_url=f"http://127.0.0.1:{port}", model="small", attempts=2, timeout_seconds=1))
    try:
        result = await consolidate(service, admin, "user:1", summarizer=llm)
    finally:
        await llm.close()
    [semantic_id] = result.written
    semantic = await service.get(admin, semantic_id)
    assert semantic.metadata["summary"] == "extractive"
    assert "espresso" in semantic.content
