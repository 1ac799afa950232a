"""`consolidate` over MCP (issue #20): the ten-memory example written by an agent through the real app gives an
admin's `consolidate` exactly three semantic memories (short answers, the FastAPI service on Python 3.11, the dog
Pepper) and none for the single note, in English and in Chinese; calling it again writes nothing; a general
question recalls the answer-style memory first, and `explain` says how many episodes it was consolidated from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from starlette.applications import Starlette

from tests.conftest import Mint, data, mcp_session

pytestmark = pytest.mark.anyio

ENGLISH = [
    "The user prefers short answers without preamble",
    "The user is building a FastAPI service",
    "The user's dog Pepper is a beagle",
    "The user started Japanese lessons",
    "The user asked again for shorter replies",
    "The service runs on Python 3.11",
    "Pepper needs a walk every morning",
    "The user dislikes verbose responses",
    "The user deploys the FastAPI app with uvicorn",
    "The user took Pepper to the vet",
]
CHINESE = [
    "用户喜欢简短的回答，不要开场白",
    "用户正在开发一个 FastAPI 服务",
    "用户的狗 Pepper 是一只比格犬",
    "用户开始上日语课",
    "用户再次要求回复更短一些",
    "这个服务运行在 Python 3.11 上",
    "Pepper 每天早上都要散步",
    "用户不喜欢冗长的回答",
    "用户用 uvicorn 部署 FastAPI 应用",
    "用户带 Pepper 去看了兽医",
]


@pytest.mark.parametrize(
    ("namespace", "texts"), [("user:en", ENGLISH), ("user:zh", CHINESE)], ids=["english", "chinese"]
)
async def test_consolidate_over_mcp_writes_three_semantic_memories_for_the_ten_memory_example(
    app: Starlette, mint: Mint, namespace: str, texts: list[str]
) -> None:
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    items = [
        {"content": text, "occurred_at": (start + timedelta(days=7 * i)).isoformat()} for i, text in enumerate(texts)
    ]
    async with mcp_session(app, mint(tenant="acme", read=[namespace], write=[namespace])) as agent:
        written = data(await agent.call_tool("write_memories", {"namespace": namespace, "items": items}))
    assert written["created"] == 10
    async with mcp_session(app, mint(tenant="acme", sub="ops", read=[], write=[], admin=True)) as admin:
        first = data(await admin.call_tool("consolidate", {"namespace": namespace}))
        again = data(await admin.call_tool("consolidate", {"namespace": namespace}))
        listed = data(await admin.call_tool("list_memories", {"namespace": namespace, "kind": "semantic"}))
        hits = data(
            await admin.call_tool(
                "recall_memory",
                {"query": "how should I answer this user?", "namespaces": [namespace], "explain": True},
            )
        )
    assert len(first["written"]) == 3 and again["written"] == []
    contents = sorted(m["content"] for m in listed["memories"])
    assert len(contents) == 3
    assert [c for c in contents if "Pepper" in c] and [c for c in contents if "FastAPI" in c and "Python 3.11" in c]
    assert not [c for c in contents if "Japanese" in c or "日语" in c]
    assert [c for c in contents if "short, concise answers" in c or "简短" in c]
    top = hits["memories"][0]
    assert top["id"] in first["written"] and top["scores"]["consolidated_from"] == 3
