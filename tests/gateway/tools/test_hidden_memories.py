"""Nothing hidden without a trace (issue #13.6), through MCP: each hide is counted in
`hindsight_memories_hidden_total{reason}`, `list_memories(hidden=...)` lists the memories in each hidden state
(and the passed plans, which are demoted, not hidden), and `write_memory` with `explain` shows what each rule
decided."""

from __future__ import annotations

import httpx2
import pytest
from starlette.applications import Starlette

from gateway.services.maintenance import maintain_all
from memory.clock import ManualClock
from tests.conftest import BASE_URL, Mint, data, mcp_session

pytestmark = pytest.mark.anyio


def hidden_counts(metrics: str) -> dict[str, float]:
    prefix = "hindsight_memories_hidden_total{reason="
    return {
        line[len(prefix) + 1 : line.index('"}')]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith(prefix)
    }


async def test_every_hide_is_counted_by_reason_and_each_hidden_state_is_listed(
    app: Starlette, mint: Mint, clock: ManualClock
) -> None:
    async with mcp_session(app, mint()) as client:
        call = client.call_tool
        await call("write_memory", {"content": "thanks!"})  # skipped: nothing stored
        repeated = data(await call("write_memory", {"content": "I keep two cats at home"}))
        merged = data(await call("write_memory", {"content": "I keep two cats at home!"}))
        old = data(await call("write_memory", {"content": "I live in Berlin"}))
        new = data(await call("write_memory", {"content": "I moved to Paris"}))
        plan = data(await call("write_memory", {"content": "I have a dentist appointment tomorrow at 3pm"}))
        brief = data(await call("write_memory", {"content": "Parking spot 14 is mine today", "ttl_seconds": 3600}))
        gone = data(await call("write_memory", {"content": "My locker code is 4411"}))
        await call("forget_memory", {"id": gone["id"], "reason": "asked to forget"})
        clock.advance(3 * 24 * 3600)
        await maintain_all(app.state.runtime)
        listed = {
            state: [m["id"] for m in data(await call("list_memories", {"hidden": state}))["memories"]]
            for state in ("expired", "superseded", "merged", "forgotten", "passed")
        }
        live = [m["id"] for m in data(await call("list_memories", {}))["memories"]]
        refused = await call("list_memories", {"hidden": "skipped"})
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        counts = hidden_counts((await http.get("/metrics")).text)

    assert merged["status"] == "updated" and merged["id"] == repeated["id"]
    assert new["superseded"] == [old["id"]]
    assert counts == {"skipped": 1.0, "merged": 1.0, "superseded": 1.0, "expired": 1.0}
    assert listed == {
        "expired": [brief["id"]],  # its ttl ran out: hidden
        "superseded": [old["id"]],
        "merged": [repeated["id"]],
        "forgotten": [gone["id"]],
        "passed": [plan["id"]],  # a plan whose day has passed: kept as history, never hidden
    }
    assert sorted(live) == sorted([repeated["id"], new["id"], plan["id"]])
    assert refused.is_error


async def test_explain_on_a_write_shows_which_rule_fired_and_why(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        plan = data(
            await client.call_tool(
                "write_memory", {"content": "The quarterly report is due on Friday", "explain": True}
            )
        )
        chit_chat = data(await client.call_tool("write_memory", {"content": "ok thanks!", "explain": True}))
        plain = data(await client.call_tool("write_memory", {"content": "I prefer short answers"}))

    expiry = plan["explain"]["pipeline"]["expiry"]
    assert expiry["rule"] and "Friday" in expiry["phrase"] and expiry["until"] and plan["explain"]["expires_at"] is None
    assert chit_chat["explain"]["stored"] is False
    assert chit_chat["explain"]["reason"].startswith("low_information")
    assert chit_chat["explain"]["pipeline"]["importance"]["rules"] == ["small_talk"]
    assert "explain" not in plain
