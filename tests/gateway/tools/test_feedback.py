"""Hit, growth and conflict rates (issue #18.3) through the real app and a real MCP client: the `feedback` tool
bumps the access counts of the memories an agent used and counts the report in
`hindsight_recall_feedback_total{used}`; an id the token cannot read answers `not_found` and records nothing; a
retry with the same `request_id` is replayed; every created write and every supersession is counted in
`hindsight_new_memories_total{kind}` and `hindsight_memories_superseded_total`, per tenant only when the
tenant label is on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette

from gateway.errors import REPLAY_META
from gateway.web.app import create_app
from memory.clock import ManualClock
from tests.conftest import BASE_URL, Mint, data, error_code, make_settings, mcp_session, running, tool_error

pytestmark = pytest.mark.anyio

UNKNOWN_ID = "01890a5d-ac96-774b-bcce-b302099a8057"
FACTS = [
    "The user's deploy target is AWS eu-west-1 region",
    "The user has a dog named Pepper, a border collie",
    "The user is learning Japanese on Tuesday evenings",
]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(app: Starlette) -> Samples:
    """Every sample of `/metrics`, by name and labels."""
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        text = (await http.get("/metrics")).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def write_all(client: Client, contents: list[str]) -> list[str]:
    return [str(data(await client.call_tool("write_memory", {"content": c}))["id"]) for c in contents]


async def access_counts(app: Starlette, client: Client) -> dict[str, int]:
    """Each listed memory's access count, once every noted access is applied."""
    await app.state.runtime.memories.drain()
    listed = data(await client.call_tool("list_memories", {"include_deleted": True}))
    return {m["id"]: m["access_count"] for m in listed["memories"]}


@asynccontextmanager
async def app_with(tmp_path: Path, clock: ManualClock, **overrides: Any) -> AsyncIterator[Starlette]:
    async with running(create_app(make_settings(tmp_path / "data", **overrides), clock=clock)) as app:
        yield app


async def test_feedback_bumps_the_access_counts_of_the_used_memories_and_counts_used_and_unused(
    app: Starlette, mint: Mint
) -> None:
    async with mcp_session(app, mint()) as client:
        first, second, third = await write_all(client, FACTS)
        recalled = data(await client.call_tool("recall_memory", {"query": "what do I know about the user"}))
        after_recall = await access_counts(app, client)
        answer = data(await client.call_tool("feedback", {"used": [first, first.upper()], "unused": [second, third]}))
        after_feedback = await access_counts(app, client)
    samples = await scrape(app)

    assert {hit["id"] for hit in recalled["memories"]} == {first, second, third}
    assert after_recall == {first: 1, second: 1, third: 1}  # recall bumps what it returned
    assert answer == {"used": 1, "unused": 2}  # an id named twice (in any case) counts once
    assert after_feedback == {first: 2, second: 1, third: 1}  # only the used one gains
    assert sample(samples, "hindsight_recall_feedback_total", used="true") == 1.0
    assert sample(samples, "hindsight_recall_feedback_total", used="false") == 2.0
    assert sample(samples, "hindsight_tool_calls_total", tool="feedback", outcome="ok") == 1.0


async def test_with_the_tenant_label_on_feedback_is_counted_per_tenant(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    async with app_with(tmp_path, clock, metrics_tenant_label=True) as app:
        async with mcp_session(app, mint(tenant="acme")) as client:
            (memory_id,) = await write_all(client, FACTS[:1])
            data(await client.call_tool("feedback", {"used": [memory_id]}))
        samples = await scrape(app)

    assert sample(samples, "hindsight_recall_feedback_total", used="true", tenant="acme") == 1.0
    assert sample(samples, "hindsight_recall_feedback_total", used="false", tenant="acme") == 0.0
    assert sample(samples, "hindsight_recall_feedback_total", used="true") is None  # no series without a tenant


async def test_an_id_the_token_cannot_read_answers_not_found_and_records_nothing(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint(read=["user:2"], write=["user:2"])) as other_user:
        (theirs,) = await write_all(other_user, ["The other user's locker code is 4411"])
    async with mcp_session(app, mint(tenant="globex")) as other_tenant:
        (foreign,) = await write_all(other_tenant, ["Globex ships on Mondays"])
    async with mcp_session(app, mint()) as client:
        (mine,) = await write_all(client, FACTS[:1])
        other_namespace = await client.call_tool("feedback", {"used": [mine, theirs]})
        other_tenant_id = await client.call_tool("feedback", {"used": [mine], "unused": [foreign]})
        unknown = await client.call_tool("feedback", {"unused": [UNKNOWN_ID]})
        counts = await access_counts(app, client)
    async with mcp_session(app, mint(read=["user:2"], write=["user:2"])) as other_user:
        their_counts = await access_counts(app, other_user)
    samples = await scrape(app)

    assert [error_code(r) for r in (other_namespace, other_tenant_id, unknown)] == ["not_found"] * 3
    assert theirs not in str(tool_error(other_tenant_id))  # nothing about the other namespace's ids
    assert counts == {mine: 0} and their_counts == {theirs: 0}  # no bump, not even of the readable id
    assert sample(samples, "hindsight_recall_feedback_total", used="true") == 0.0
    assert sample(samples, "hindsight_recall_feedback_total", used="false") == 0.0


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({}, "at least one"),
        ({"used": [], "unused": []}, "at least one"),
        ({"used": ["not-a-memory-id"]}, "used[0]"),
        ({"used": [UNKNOWN_ID], "unused": [UNKNOWN_ID.upper()]}, "both used and unused"),
        ({"unused": [UNKNOWN_ID] * 201}, "unused"),
        ({"used": UNKNOWN_ID}, "used"),
    ],
    ids=["nothing", "empty-lists", "malformed-id", "in-both-lists", "too-many", "not-a-list"],
)
async def test_a_malformed_report_is_an_invalid_argument_naming_what_is_wrong(
    app: Starlette, mint: Mint, arguments: dict[str, Any], says: str
) -> None:
    async with mcp_session(app, mint()) as client:
        result = await client.call_tool("feedback", arguments)
    assert error_code(result) == "invalid_argument"
    assert says in tool_error(result)["message"]


async def test_a_retry_with_the_same_request_id_is_replayed_and_counts_once(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        used, unused = await write_all(client, FACTS[:2])
        arguments = {"used": [used], "unused": [unused], "request_id": "feedback-1"}
        first = await client.call_tool("feedback", arguments)
        retry = await client.call_tool("feedback", arguments)
        conflict = await client.call_tool("feedback", {"used": [unused], "request_id": "feedback-1"})
        counts = await access_counts(app, client)
    samples = await scrape(app)

    assert data(retry) == data(first) == {"used": 1, "unused": 1}
    assert retry.meta is not None and retry.meta.get(REPLAY_META)
    assert error_code(conflict) == "idempotency_conflict"
    assert counts == {used: 1, unused: 0}
    assert sample(samples, "hindsight_recall_feedback_total", used="true") == 1.0
    assert sample(samples, "hindsight_idempotent_replays_total", tool="feedback") == 1.0


async def test_a_read_only_token_may_not_report_feedback(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as writer:
        (memory_id,) = await write_all(writer, FACTS[:1])
    async with mcp_session(app, mint(scopes=["memory:read"])) as reader:
        result = await reader.call_tool("feedback", {"used": [memory_id]})
    assert error_code(result) == "scope_forbidden"


async def test_metrics_count_each_created_memory_by_kind_and_each_supersession(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        call = client.call_tool
        before = await scrape(app)
        old = data(await call("write_memory", {"content": "I live in Berlin"}))
        new = data(await call("write_memory", {"content": "I moved to Paris"}))
        data(await call("write_memory", {"content": "I moved to Paris"}))  # an exact repeat: nothing created
        data(await call("write_memory", {"content": "thanks!"}))  # chit-chat: nothing stored
        data(await call("write_memory", {"content": "The user prefers tea to coffee", "kind": "semantic"}))
    after = await scrape(app)

    assert new["superseded"] == [old["id"]]
    assert sample(before, "hindsight_new_memories_total", kind="episodic") == 0.0
    assert sample(before, "hindsight_new_memories_total", kind="semantic") == 0.0
    assert sample(before, "hindsight_memories_superseded_total") == 0.0  # every series there from the start
    assert sample(after, "hindsight_new_memories_total", kind="episodic") == 2.0
    assert sample(after, "hindsight_new_memories_total", kind="semantic") == 1.0
    assert sample(after, "hindsight_memories_superseded_total") == 1.0
    assert sample(after, "hindsight_memories_hidden_total", reason="superseded") == 1.0  # the same supersession


async def test_growth_and_conflicts_count_memories_extracted_from_turns_per_tenant_with_the_tenant_label(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    async with app_with(tmp_path, clock, working_memory_turns=1, metrics_tenant_label=True) as app:
        async with mcp_session(app, mint(tenant="acme")) as client:
            for content in ("I live in Berlin", "I moved to Paris", "ok"):
                turn = {"session_id": "s-1", "role": "user", "content": content}
                data(await client.call_tool("record_turn", turn))
            listed = data(await client.call_tool("list_memories", {"include_deleted": True}))
        samples = await scrape(app)

    assert [m["content"] for m in listed["memories"]] == ["user: I live in Berlin", "user: I moved to Paris"]
    assert sample(samples, "hindsight_new_memories_total", kind="episodic", tenant="acme") == 2.0
    assert sample(samples, "hindsight_new_memories_total", kind="episodic") is None
    assert [m["superseded_by"] is not None for m in listed["memories"]] == [True, False]  # Berlin, by Paris
    assert sample(samples, "hindsight_memories_superseded_total", tenant="acme") == 1.0
