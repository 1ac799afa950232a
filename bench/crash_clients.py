"""The clients of the crash stage (`bench.crash`): each keeps one request of its kind (`KINDS`) in flight and
retries it with the same request id until acknowledged, across kills (`Driver`); then every stored memory and event
is read back and counted per request id: duplicates, lost, retried and partial per kind (`KindReport`)."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio
import httpx2

from bench.crash_server import Server
from memory.write.repeats import COMPLETED

KINDS = ("forced_write", "forced_batch", "event")
BATCH_ITEMS = 4
STATEMENTS = (  # forced writes repeat these on purpose: force stores a repeat, once per request
    "The team meeting moved to Friday at 10.",
    "Alice prefers tea over coffee.",
    "The staging database listens on port 5433.",
    "Our release train leaves every second Tuesday.",
)
ATTEMPTS = 400  # a request's attempts before the run gives up on it (a bug, not a crash)


class CallRefused(RuntimeError):
    """A call answered with an error a retry cannot fix (idempotency_conflict, invalid_argument, ...)."""


@dataclass
class KindTally:
    requests: int = 0
    retried: int = 0
    partial: int = 0
    acknowledged: dict[str, str] = field(default_factory=dict)  # request id -> the id its answer named


@dataclass
class Acknowledged:
    answer: dict[str, Any]
    attempts: int
    sent: datetime  # when the answered attempt was sent


@dataclass
class KindReport:
    requests: int
    retried: int
    partial: int
    duplicates: int
    lost: int


class Driver:
    """The clients of one run: each keeps one request in flight, counts acknowledgements, retries until done."""

    def __init__(self, server: Server, token: str, rng: random.Random, workers: int) -> None:
        self.server = server
        self.headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
        self.rng = rng
        self.workers = workers
        self.tallies = {kind: KindTally() for kind in KINDS}
        self.acks = 0
        self.threshold = 0
        self.enough = anyio.Event()
        self.finishing = False
        self.sessions: set[str] = set()

    def arm(self, low: int, high: int) -> None:
        """The next kill comes after a random number of acknowledged calls in [low, high]."""
        self.acks, self.threshold, self.enough = 0, self.rng.randint(low, high), anyio.Event()

    def _acknowledged(self) -> None:
        self.acks += 1
        if self.acks >= self.threshold:
            self.enough.set()

    async def call(self, http: httpx2.AsyncClient, tool: str, arguments: dict[str, Any]) -> Acknowledged:
        """The tool's answer once acknowledged; retries across kills and retryable errors with the same arguments
        (so the same request ids)."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        for attempt in range(1, ATTEMPTS + 1):
            up = self.server.up
            await up.wait()
            sent = datetime.now().astimezone()
            try:
                response = await http.post(self.server.url, json=body, headers=self.headers)
            except httpx2.HTTPError:
                continue  # the server died under the call: wait for the restart, then retry
            if response.status_code != 200:
                if response.status_code in (429, 503):
                    continue
                raise CallRefused(f"{tool}: HTTP {response.status_code}: {response.text[:200]}")
            result = response.json()["result"]
            if result.get("isError"):
                error = _error_of(result)
                if error.get("retryable"):
                    continue
                raise CallRefused(f"{tool}: {error}")
            return Acknowledged(result["structuredContent"], attempt, sent)
        raise CallRefused(f"{tool}: not acknowledged after {ATTEMPTS} attempts")

    async def batch(self, http: httpx2.AsyncClient, items: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
        """A `write_memories` call retried (the same items, so the same request ids) until every item is written;
        an item that failed retryably (`backend_unavailable`: it and the later ones were not attempted) is retried
        with the rest, the items done replay."""
        attempts = 0
        while attempts < ATTEMPTS:
            done = await self.call(http, "write_memories", {"items": items})
            answer, attempts = done.answer, attempts + done.attempts
            errors = [result["error"] for result in answer["results"] if "error" in result]
            if not errors:
                return answer, attempts
            if not all(error.get("retryable") for error in errors):
                raise CallRefused(f"write_memories items: {errors}")
        raise CallRefused(f"write_memories: not written after {ATTEMPTS} attempts")

    async def worker(self, kind: str, number: int) -> None:
        tally = self.tallies[kind]
        async with httpx2.AsyncClient(timeout=120.0) as http:
            n = 0
            while not self.finishing:
                rid = f"{kind}-{number}-{n}"
                tally.requests += 1
                if kind == "forced_write":
                    content = STATEMENTS[(number + n) % len(STATEMENTS)]
                    done = await self.call(http, "write_memory", {"content": content, "force": True, "request_id": rid})
                    answer, attempts = done.answer, done.attempts
                    tally.acknowledged[rid] = answer["id"]
                    tally.partial += answer.get("reason") == COMPLETED
                elif kind == "forced_batch":
                    items: list[dict[str, Any]] = [
                        {"content": STATEMENTS[(n + i) % len(STATEMENTS)], "force": True, "request_id": f"{rid}.{i}"}
                        for i in range(BATCH_ITEMS)
                    ]
                    answer, attempts = await self.batch(http, items)
                    for item, result in zip(items, answer["results"], strict=True):
                        tally.acknowledged[item["request_id"]] = result["id"]
                        tally.partial += result.get("reason") == COMPLETED
                    tally.requests += BATCH_ITEMS - 1  # counted per item, as the chaos run counted them
                    tally.retried += (attempts > 1) * (BATCH_ITEMS - 1)
                else:
                    session = f"crash-{number}"
                    self.sessions.add(session)
                    arguments = {
                        "session_id": session,
                        "type": "user_message",
                        "content": f"Worker {number} finished step {n} of the migration.",
                        "request_id": rid,
                    }
                    done = await self.call(http, "record_event", arguments)
                    event, attempts = done.answer["event"], done.attempts
                    tally.acknowledged[rid] = event["id"]
                    # recorded before the answered attempt was sent: an earlier attempt's event, found by its request
                    tally.partial += datetime.fromisoformat(event["recorded_at"]) < done.sent
                tally.retried += attempts > 1
                self._acknowledged()
                n += 1

    async def stored(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Every memory and event of the run, read back through the API."""
        events: list[dict[str, Any]] = []
        async with httpx2.AsyncClient(timeout=120.0) as http:
            memories = await self.listed(http, "list_memories", {"include_deleted": True}, "memories", "cursor")
            for session in sorted(self.sessions):
                events += await self.listed(http, "list_events", {"session_id": session}, "events", "after")
        return memories, events

    async def listed(
        self, http: httpx2.AsyncClient, tool: str, arguments: dict[str, Any], items: str, cursor_argument: str
    ) -> list[dict[str, Any]]:
        """Every item of a listing tool, 200 a page: called again with each page's `next_cursor` (passed as
        `cursor_argument`) until a page has none."""
        found: list[dict[str, Any]] = []
        query: dict[str, Any] = {"limit": 200, **arguments}
        while True:
            page = (await self.call(http, tool, query)).answer
            found += page[items]
            if page["next_cursor"] is None:
                return found
            query = {**query, cursor_argument: page["next_cursor"]}

    def report(self, memories: list[dict[str, Any]], events: list[dict[str, Any]]) -> dict[str, KindReport]:
        stored: dict[str, list[tuple[str | None, str]]] = {
            "forced_write": [(m["source"]["request_id"], m["id"]) for m in memories],
            "forced_batch": [(m["source"]["request_id"], m["id"]) for m in memories],
            "event": [(e["request_id"], e["id"]) for e in events],
        }
        reports: dict[str, KindReport] = {}
        for kind in KINDS:
            tally = self.tallies[kind]
            mine = [(rid, sid) for rid, sid in stored[kind] if rid is not None and rid.startswith(f"{kind}-")]
            counts = Counter(rid for rid, _ in mine)
            ids = {sid for _, sid in mine}
            duplicates = sum(count - 1 for count in counts.values())
            lost = sum(1 for rid, answered in tally.acknowledged.items() if answered not in ids or counts[rid] == 0)
            reports[kind] = KindReport(tally.requests, tally.retried, tally.partial, duplicates, lost)
        return reports


def _error_of(result: dict[str, Any]) -> dict[str, Any]:
    try:
        error: dict[str, Any] = json.loads(result["content"][0]["text"])["error"]
    except (KeyError, IndexError, ValueError):
        return {"code": "unknown", "message": str(result)[:200], "retryable": False}
    return error
