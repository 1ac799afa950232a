"""The attackers of the fairness stage (`bench.fairness`), run in a child process (`attack_process`) so their HTTP
clients' CPU is not the victim's process's: each attack's `Plan` (`plan_of`), the expensive recalls and big batches
sent by in-limit clients that wait as told, the floods of refused requests from their own addresses, the idle
connections hoarded (`hoard`), and the count of every answer by outcome."""

from __future__ import annotations

import asyncio
import json
import queue
import random
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

import anyio
import httpx2

from bench import connections
from bench.fairness_corpus import ATTACKER, memory_text, tenant_token
from bench.raw_mcp import HEADERS, tool_call

BATCH_ITEMS, ITEM_CHARS = 120, 7_800
FLOODS = {"bad-token flood": "127.0.1.1", "1.1 MB body flood": "127.0.1.2"}  # attack: its source address
HOARD = "5,000 idle connections"
FLOOD_CONNECTIONS, BAD_TOKEN_BYTES, BIG_BODY_BYTES = 8, 8_192, 1_100_000
HOARDED, HOARD_ADDRESSES = 5_000, 50
DRAIN_SECONDS = 120.0  # how long an attack process may still take to report after its plan's seconds


# -- the attackers (a child process) ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    url: str
    recallers: tuple[str, ...]  # one connection each: the subject it uses
    batchers: tuple[str, ...]
    recall_arguments: dict[str, Any]
    seconds: float
    flood: str | None = None  # one of FLOODS: refused requests, sent without waiting
    hoard: int = 0  # idle connections held open for the whole attack


def _outcome(answer: httpx2.Response) -> str:
    if answer.status_code == 429:
        return "429"
    if answer.status_code != 200:
        return str(answer.status_code)
    head = answer.content[-400:]
    if b'"isError":true' in head:
        code = json.loads(answer.json()["result"]["content"][0]["text"])["error"]["code"]
        return f"error:{code}"
    return "ok"


async def _attack(plan: Plan) -> dict[str, Any]:
    counts: dict[str, Counter[str]] = {"recall": Counter(), "batch": Counter()}
    served: dict[str, list[float]] = {"recall": [], "batch": []}
    deadline = time.monotonic() + plan.seconds
    rng = random.Random(11)
    items = [{"content": memory_text(rng, 90_000 + i, ITEM_CHARS), "force": True} for i in range(BATCH_ITEMS)]

    async def loop(kind: str, subject: str, body: bytes) -> None:
        token = tenant_token(ATTACKER, subject)
        async with httpx2.AsyncClient(headers={**HEADERS, "authorization": f"Bearer {token}"}, timeout=120) as http:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    answer = await http.post(plan.url, content=body)
                except httpx2.HTTPError:
                    counts[kind]["transport error"] += 1
                    continue
                outcome = _outcome(answer)
                counts[kind][outcome] += 1
                if outcome == "ok":
                    served[kind].append(time.perf_counter() - started)
                elif outcome == "429":  # an in-limit client: it waits as told
                    await _pause(float(answer.headers.get("retry-after", "1")), deadline)
                elif outcome == "error:rate_limited":  # no turn in time, or a budget spent meanwhile
                    await _pause(1.0, deadline)

    async def flood(source: str) -> None:
        """Refused requests back to back from `source`, whatever the answer says."""
        kind = "flood"
        big = plan.flood == "1.1 MB body flood"
        body = tool_call("write_memory", {"content": "x" * BIG_BODY_BYTES}) if big else tool_call("whoami", {})
        transport = httpx2.AsyncHTTPTransport(local_address=source)
        async with httpx2.AsyncClient(transport=transport, headers=HEADERS, timeout=30) as http:
            while time.monotonic() < deadline:
                token = tenant_token(ATTACKER, "flooder") if big else bad_token(rng)
                try:
                    answer = await http.post(plan.url, content=body, headers={"authorization": f"Bearer {token}"})
                except httpx2.HTTPError:
                    counts[kind]["transport error"] += 1
                    continue
                counts[kind][_outcome(answer)] += 1

    recall_body = tool_call("recall_memory", plan.recall_arguments)
    batch_body = tool_call("write_memories", {"items": items})
    counts["flood"] = Counter()
    async with anyio.create_task_group() as group:
        if plan.hoard:
            counts["hoard"] = Counter()
            group.start_soon(hoard, plan, counts["hoard"])
        if plan.flood is not None:
            for _ in range(FLOOD_CONNECTIONS):
                group.start_soon(flood, FLOODS[plan.flood])
        for subject in plan.recallers:
            group.start_soon(loop, "recall", subject, recall_body)
        for subject in plan.batchers:
            group.start_soon(loop, "batch", subject, batch_body)
    return {"counts": {k: dict(v) for k, v in counts.items()}, "served": served}


def bad_token(rng: random.Random) -> str:
    """A JWT-shaped bearer token of `BAD_TOKEN_BYTES` that no secret signed, new each time."""
    return "eyJhbGciOiJIUzI1NiJ9." + "".join(rng.choices(_BASE64URL, k=BAD_TOKEN_BYTES - 21))


_BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."


async def hoard(plan: Plan, counts: Counter[str]) -> None:
    """`plan.hoard` connections from `HOARD_ADDRESSES` addresses that send nothing, held until the plan's end;
    `counts` gets how many the server answered (by status line) and how many were still open at the end."""
    port = int(plan.url.split(":")[2].split("/")[0])
    connections.raise_open_files(plan.hoard + 1024)
    held = connections.Hoard(plan.hoard, began=time.monotonic())
    stop, gate = asyncio.Event(), asyncio.Semaphore(connections.CONNECTING_AT_ONCE)
    holders = [
        asyncio.create_task(connections.hold_one(port, f"127.0.2.{1 + i % HOARD_ADDRESSES}", "idle", held, gate, stop))
        for i in range(plan.hoard)
    ]
    await anyio.sleep(max(0.0, plan.seconds))
    counts["held open to the end"] = held.open_now
    stop.set()
    await asyncio.gather(*holders)
    for answer, times in held.answers.items():
        counts[f"answered {answer}"] = len(times)
    counts.update({f"not opened ({why})": n for why, n in held.not_opened.items()})


async def _pause(seconds: float, deadline: float) -> None:
    await anyio.sleep(max(0.0, min(seconds, deadline - time.monotonic())))


def attack_process(plan: Plan, results: Any) -> None:
    results.put(anyio.run(_attack, plan))


def outcome_of(child: BaseProcess, results: Any, seconds: float) -> dict[str, Any]:
    """What the attack process `child` put in `results` once its attack of `seconds` is over; an error, not a wait
    without end, when the process ends without it (it failed: its traceback is on stderr) or is still at it long
    after its plan (`DRAIN_SECONDS`)."""
    deadline = time.monotonic() + seconds + DRAIN_SECONDS
    while True:
        alive = child.is_alive()  # before the get: what a process put before it ended is read first
        try:
            outcome: dict[str, Any] = results.get(timeout=1.0)
            return outcome
        except queue.Empty:
            if not alive or time.monotonic() > deadline:
                child.kill()
                raise RuntimeError(f"the attack process gave no figures (exit code {child.exitcode})") from None


def plan_of(attack: str, url: str, arguments: dict[str, Any], seconds: float) -> Plan:
    if attack == "1 connection":
        return Plan(url, ("attacker-0",), (), arguments, seconds)
    if attack == "4 connections, 1 token":
        return Plan(url, ("attacker-0",) * 4, (), arguments, seconds)
    if attack == "12 tokens, 1 tenant":
        return Plan(url, tuple(f"attacker-{i}" for i in range(12)), (), arguments, seconds)
    if attack in FLOODS:
        return Plan(url, (), (), arguments, seconds, flood=attack)
    if attack == HOARD:
        return Plan(url, (), (), arguments, seconds, hoard=HOARDED)
    return Plan(url, ("attacker-recall",), tuple(f"batcher-{i}" for i in range(4)), arguments, seconds)
