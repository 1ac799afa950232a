"""Cost-aware fairness (issue #32, item 1): CPU budgets per subject and tenant charged what each call was measured
to spend, a per-tenant cap on calls running at once, and bounds on what a recall may ask for.

Budgets with an injected clock first (`gateway.web.fairness` on the in-process limiter), then through the real app:
a tenant that spends its CPU budget gets 429 with `Retry-After` while another tenant is still served (in process,
on a real Redis and a real Redis Cluster), a tenant at its cap waits or is refused while another is served, and
the recall bounds are published and enforced."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx2
import pytest
import redis.asyncio
from starlette.applications import Starlette

from gateway.web.app import create_app
from gateway.web.fairness import ADMISSION_MS, Fairness, admit, charge, cpu_buckets, tenant_limits
from memory.clock import ManualClock
from memory.cpu_meter import run_metered
from memory.locking.redis_lock import lock_key
from ops.config import Settings, TenantLimits
from tenancy import SCOPE_READ, SCOPE_WRITE, Principal
from tenancy.errors import CpuBudgetSpent, TooManyCalls
from tenancy.rate_limits import InProcessRateLimiter
from tests.chat_server import ChatRequest, ChatServer
from tests.conftest import BASE_URL, GENEROUS_CALLS, HEADERS, Mint, make_settings, running
from tests.tenancy.signing import FakeMonotonic

pytestmark = pytest.mark.anyio


def principal(tenant: str, subject: str) -> Principal:
    return Principal(
        subject=subject,
        tenant=tenant,
        read_namespaces=("user:1",),
        write_namespaces=("user:1",),
        scopes=frozenset({SCOPE_READ, SCOPE_WRITE}),
    )


def burn(seconds: float) -> None:
    started = time.thread_time()
    while time.thread_time() - started < seconds:
        sum(range(200))


# --- the budgets, on an injected clock -------------------------------------------------------------------------

BUDGET = TenantLimits(subject_cpu_ms_per_second=100, tenant_cpu_ms_per_second=300, cpu_burst_seconds=2)


def budget_settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data", rate_limit_default=BUDGET)


def test_a_calls_cpu_buckets_are_its_subjects_and_its_tenants_in_cpu_milliseconds(tmp_path: Path) -> None:
    subject, tenant = cpu_buckets(principal("acme", "agent-1"), BUDGET)

    assert (subject.key, subject.capacity, subject.refill_per_second) == ("hs:{acme}:cpu:s:agent-1", 200, 100)
    assert (tenant.key, tenant.capacity, tenant.refill_per_second) == ("hs:{acme}:cpu:t", 600, 300)


async def test_a_subject_that_spent_its_budget_waits_out_its_debt_while_its_sibling_is_admitted(
    tmp_path: Path,
) -> None:
    clock, settings = FakeMonotonic(), budget_settings(tmp_path)
    limiter = InProcessRateLimiter(clock=clock)
    greedy, sibling = principal("acme", "greedy"), principal("acme", "sibling")

    assert (await admit(limiter, greedy, settings)).allowed
    await charge(limiter, greedy, BUDGET, cpu_seconds=0.5, taken_ms=ADMISSION_MS)  # 500 ms against 200: -300
    refused = await admit(limiter, greedy, settings)

    assert not refused.allowed
    assert refused.retry_after_seconds == pytest.approx(3.01)  # from -300 to one millisecond at 100 ms/s
    assert (await admit(limiter, sibling, settings)).allowed  # the tenant's bucket still holds 99
    clock.advance(refused.retry_after_seconds + 1e-6)
    assert (await admit(limiter, greedy, settings)).allowed


async def test_a_tenant_in_debt_refuses_every_subject_and_another_tenant_is_untouched(tmp_path: Path) -> None:
    clock, settings = FakeMonotonic(), budget_settings(tmp_path)
    limiter = InProcessRateLimiter(clock=clock)

    for n in range(4):  # four subjects, 190 ms each: the tenant's 600 are spent, no subject's 200
        subject = principal("acme", f"agent-{n}")
        assert (await admit(limiter, subject, settings)).allowed
        await charge(limiter, subject, BUDGET, cpu_seconds=0.19, taken_ms=ADMISSION_MS)
    fresh = await admit(limiter, principal("acme", "fresh"), settings)

    assert not fresh.allowed
    assert fresh.retry_after_seconds == pytest.approx((4 * 190 - 600 + 1) / 300)
    assert (await admit(limiter, principal("globex", "agent-0"), settings)).allowed


async def test_a_turn_charges_the_cpu_its_call_spent_and_a_call_queued_behind_is_checked_again(
    tmp_path: Path,
) -> None:
    """A call admitted by the gate while another call of its subject ran is admitted again when its turn comes:
    the first call's charge put the subject in debt, so the queued one is refused then (not run on the budget of
    the moment both arrived)."""
    limiter = InProcessRateLimiter(clock=FakeMonotonic())
    one_at_a_time = TenantLimits(**{**BUDGET.model_dump(), "subject_concurrency": 1})
    settings = make_settings(tmp_path / "data", rate_limit_default=one_at_a_time)
    fairness, caller, go = Fairness(), principal("acme", "agent-1"), anyio.Event()
    outcomes: list[str] = []

    async def spend(seconds: float) -> None:
        await go.wait()
        burn(seconds)

    async def call(seconds: float) -> None:
        assert (await admit(limiter, caller, settings)).allowed  # what the gate does
        try:
            async with fairness.turn(limiter, settings, caller) as meter:
                await run_metered(meter, spend(seconds))
            outcomes.append("ran")
        except CpuBudgetSpent as exc:
            outcomes.append(exc.code)

    async with anyio.create_task_group() as group:
        group.start_soon(call, 0.25)  # 250 ms against the 200 its subject holds
        await anyio.wait_all_tasks_blocked()
        group.start_soon(call, 0.01)  # admitted now, then queued for the one turn
        await anyio.wait_all_tasks_blocked()
        assert fairness.slots.running("acme", "agent-1") == 1
        go.set()

    assert outcomes == ["ran", "rate_limited"]
    refused = await admit(limiter, caller, settings)
    assert not refused.allowed
    assert refused.retry_after_seconds >= (250 - 200) / 100  # the 250 ms spent beyond the 200 held, at 100 ms/s


async def _spend(seconds: float) -> None:
    await anyio.lowlevel.checkpoint()
    burn(seconds)


async def test_without_a_limiter_a_turn_only_measures(tmp_path: Path) -> None:
    fairness, caller = Fairness(), principal("acme", "agent-1")
    settings = make_settings(tmp_path / "data", rate_limit_enabled=False)

    async with fairness.turn(None, settings, caller) as meter:
        await run_metered(meter, _spend(0.01))

    assert meter.seconds >= 0.01
    assert fairness.slots.running("acme") == 0


# --- through the real app ---------------------------------------------------------------------------------------


def tool_call(name: str, arguments: dict[str, object], call_id: int = 1) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


async def post(http: httpx2.AsyncClient, token: str, body: dict[str, object]) -> httpx2.Response:
    return await http.post("/mcp", json=body, headers={**HEADERS, "authorization": f"Bearer {token}"})


def tool_result(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def tool_error_code(response: httpx2.Response) -> str | None:
    result = tool_result(response)
    if not result.get("isError"):
        return None
    return str(json.loads(result["content"][0]["text"])["error"]["code"])


TINY_CPU = TenantLimits(
    **GENEROUS_CALLS, subject_cpu_ms_per_second=1, tenant_cpu_ms_per_second=1, cpu_burst_seconds=5
)  # 5 ms of CPU in each bucket, 1 ms more per second: a batch of writes spends it, and years of debt follow


async def test_a_tenant_that_spends_its_cpu_budget_gets_429s_while_another_tenant_is_served(
    tmp_path: Path, clock: ManualClock, mint: Mint, limiter_backend: dict[str, Any]
) -> None:
    settings = make_settings(tmp_path / "data", rate_limit_tenants={"greedy": TINY_CPU}, **limiter_backend)
    batch = tool_call("write_memories", {"items": [{"content": f"Greedy fact number {n}"} for n in range(12)]})
    recall = tool_call("recall_memory", {"query": "which fact?"})
    async with running(create_app(settings, clock=clock)) as app, raw_client(app) as http:
        greedy, greedy_sibling, quiet = mint(tenant="greedy"), mint(tenant="greedy", sub="agent-2"), mint("quiet")
        spent = await post(http, greedy, batch)  # admitted with 5 ms in its buckets, charged all it spent
        refused = await post(http, greedy, recall)
        sibling = await post(http, greedy_sibling, recall)  # the tenant's bucket is in debt too
        served = await post(http, quiet, recall)
    assert tool_error_code(spent) is None and tool_result(spent)["structuredContent"]["created"] == 12
    for refusal in (refused, sibling):
        assert refusal.status_code == 429
        assert int(refusal.headers["retry-after"]) >= 1
        error = refusal.json()["error"]
        assert error["data"]["code"] == "rate_limited" and error["data"]["retryable"] is True
        assert "CPU budget" in error["data"]["message"]
        assert refusal.json()["id"] == 1
    assert tool_error_code(served) is None


async def test_a_tenant_out_of_cpu_budget_is_served_again_once_its_debt_is_repaid(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    modest = TenantLimits(
        **GENEROUS_CALLS, subject_cpu_ms_per_second=10, tenant_cpu_ms_per_second=10, cpu_burst_seconds=0.5
    )  # 5 ms of CPU, 10 more per second on the app's clock
    settings = make_settings(tmp_path / "data", rate_limit_default=modest)
    batch = tool_call("write_memories", {"items": [{"content": f"Fact number {n}"} for n in range(12)]})
    async with running(create_app(settings, clock=clock)) as app, raw_client(app) as http:
        token = mint()
        await post(http, token, batch)
        refused = await post(http, token, tool_call("whoami", {}))
        clock.advance(int(refused.headers["retry-after"]))
        after = await post(http, token, tool_call("whoami", {}))
        metrics = (await http.get("/metrics")).text
    charged = next(
        line
        for line in metrics.splitlines()
        if line.startswith('hindsight_tool_cpu_seconds_total{tool="write_memories"}')
    )
    assert float(charged.split()[-1]) >= 0.005  # what put the tenant in debt: over the 5 ms its buckets held
    assert refused.status_code == 429
    assert tool_error_code(after) is None, (refused.headers, after.text)


def raw_client(app: Starlette) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL, timeout=60)


ONE_CALL = {**GENEROUS_CALLS, "tenant_concurrency": 1, "subject_concurrency": 1}


async def test_a_tenant_at_its_concurrency_cap_waits_its_turn_or_is_refused_while_another_is_served(
    tmp_path: Path, clock: ManualClock, mint: Mint, redis_url: str
) -> None:
    """Each tenant runs one call at a time: a write held up by its namespace's lock, which another replica holds
    (a lock key in the shared Redis), keeps the tenant's turn; the tenant's next call waits for it (patient) or is
    refused once its wait runs out (hasty); another tenant is served meanwhile."""
    settings = make_settings(
        tmp_path / "data",
        redis_url=redis_url,
        rate_limit_tenants={
            "patient": TenantLimits(**ONE_CALL, concurrency_wait_seconds=30),
            "hasty": TenantLimits(**ONE_CALL, concurrency_wait_seconds=0.2),
        },
    )
    held_write = tool_call("write_memory", {"content": "The user's deploy target is AWS eu-west-1"})
    answers: dict[str, httpx2.Response] = {}
    other_replica = redis.asyncio.Redis.from_url(redis_url)
    held = [lock_key(tenant, "user:1") for tenant in ("patient", "hasty")]
    async with running(create_app(settings, clock=clock)) as app, raw_client(app) as http:

        async def send(name: str, token: str, body: dict[str, object]) -> None:
            answers[name] = await post(http, token, body)

        async with anyio.create_task_group() as group:
            for key in held:
                assert await other_replica.set(key, "another replica's write", px=30_000)
            group.start_soon(send, "patient holds", mint(tenant="patient"), held_write)
            group.start_soon(send, "hasty holds", mint(tenant="hasty"), held_write)
            local = app.state.runtime.memories.locks._local  # this replica's side of the namespace locks
            with anyio.fail_after(20):  # until both writes, in their tenant's one turn, wait on the other replica
                while not all(local_holder(local, tenant) for tenant in ("patient", "hasty")):
                    await anyio.wait_all_tasks_blocked()
            group.start_soon(send, "patient queued", mint(tenant="patient", sub="agent-2"), tool_call("whoami", {}))
            await send("hasty refused", mint(tenant="hasty", sub="agent-2"), tool_call("whoami", {}))
            await send("other served", mint(tenant="acme"), tool_call("whoami", {}))
            assert "patient queued" not in answers  # still waiting for the patient tenant's one turn
            await other_replica.delete(*held)  # the other replica's writes are done: the held writes go on
    await other_replica.aclose()
    assert tool_error_code(answers["hasty refused"]) == "rate_limited"
    assert "already has 1 tool calls running" in tool_result(answers["hasty refused"])["content"][0]["text"]
    assert tool_error_code(answers["other served"]) is None
    assert tool_error_code(answers["patient queued"]) is None  # ran once the held write was done
    for name in ("patient holds", "hasty holds"):
        assert tool_error_code(answers[name]) is None


def local_holder(locks: Any, tenant: str) -> bool:
    """Whether a write of this process holds the tenant's user:1 lock here (and so waits for the Redis one)."""
    entry = locks._entries.get((tenant, "user:1"))
    return entry is not None and bool(entry.lock.locked())


class HeldLlm:
    """A real chat server whose answers wait until `released`."""

    def __init__(self) -> None:
        self.arrived = threading.Condition()
        self.released = threading.Event()
        self.server = ChatServer(self._reply)

    def _reply(self, request: ChatRequest) -> str:
        with self.arrived:
            self.arrived.notify_all()
        self.released.wait(30)
        return "0.9"

    def settings(self, data_dir: Path, concurrency_wait_seconds: float) -> Settings:
        """A gateway whose writes ask this server for their importance (for up to 30 s), one call at a time per
        tenant, a second call waiting up to `concurrency_wait_seconds` for the turn."""
        return make_settings(
            data_dir,
            llm_url=self.server.url,
            llm_model="rater",
            llm_importance=True,
            llm_importance_timeout_seconds=30,
            rate_limit_default=TenantLimits(**ONE_CALL, concurrency_wait_seconds=concurrency_wait_seconds),
        )

    async def wait_for_requests(self, count: int) -> None:
        def wait() -> bool:
            with self.arrived:
                return self.arrived.wait_for(lambda: len(self.server.requests) >= count, 10)

        assert await anyio.to_thread.run_sync(wait), "the write never asked the LLM"


async def test_a_call_waiting_on_the_llm_leaves_its_turn_to_the_tenants_other_calls(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    """A write waiting on the LLM's importance spends no CPU here: its tenant's one turn goes to its next call
    meanwhile, and the write queues for it again once the LLM answers."""
    llm = HeldLlm()
    with llm.server:
        try:
            settings = llm.settings(tmp_path / "data", concurrency_wait_seconds=0.5)
            write = tool_call("write_memory", {"content": "The user's deploy target is AWS eu-west-1", "explain": True})
            async with running(create_app(settings, clock=clock)) as app, raw_client(app) as http:
                answers: dict[str, httpx2.Response] = {}

                async def send(name: str, token: str, body: dict[str, object]) -> None:
                    answers[name] = await post(http, token, body)

                async with anyio.create_task_group() as group:
                    group.start_soon(send, "write", mint(), write)
                    await llm.wait_for_requests(1)
                    await send("meanwhile", mint(sub="agent-2"), tool_call("whoami", {}))
                    llm.released.set()
        finally:
            llm.released.set()
    assert tool_error_code(answers["meanwhile"]) is None  # served at once, not refused after its 0.5 s wait
    assert tool_error_code(answers["write"]) is None
    assert tool_result(answers["write"])["structuredContent"]["status"] == "created"


async def test_a_retry_waiting_on_the_first_attempts_claim_leaves_it_the_turn_it_needs_to_finish(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    """The first attempt of a write waits on the LLM, out of its turn; its retry (same token, same request_id)
    takes the one turn and waits for the first attempt's claim: out of its turn too, so the first attempt gets it
    back when the LLM answers and finishes, and the retry replays its answer (nothing waits 30 s for the other)."""
    llm = HeldLlm()
    with llm.server:
        try:
            settings = llm.settings(tmp_path / "data", concurrency_wait_seconds=30)
            write = tool_call(
                "write_memory", {"content": "The user's deploy target is AWS eu-west-1", "request_id": "r-1"}
            )
            async with running(create_app(settings, clock=clock)) as app, raw_client(app) as http:
                answers: dict[str, httpx2.Response] = {}

                async def send(name: str) -> None:
                    answers[name] = await post(http, mint(), write)

                with anyio.fail_after(15):
                    async with anyio.create_task_group() as group:
                        group.start_soon(send, "first")
                        await llm.wait_for_requests(1)
                        group.start_soon(send, "retry")
                        await anyio.wait_all_tasks_blocked()
                        llm.released.set()
        finally:
            llm.released.set()
    first, retry = tool_result(answers["first"]), tool_result(answers["retry"])
    assert first["structuredContent"]["status"] == "created"
    assert retry["structuredContent"] == first["structuredContent"]
    assert retry["_meta"] == {"hindsight/replayed": True}


# --- bounds on what a recall may ask for -------------------------------------------------------------------------


async def test_recall_bounds_are_published_and_enforced(app: Starlette, mint: Mint) -> None:
    settings: Settings = app.state.settings
    async with raw_client(app) as http:
        token = mint()
        listed = await http.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**HEADERS, "authorization": f"Bearer {token}"},
        )
        [recall] = [tool for tool in listed.json()["result"]["tools"] if tool["name"] == "recall_memory"]
        schema = recall["inputSchema"]["properties"]
        long_query = await post(http, token, tool_call("recall_memory", {"query": "deploy " * 400}))
        deep = await post(http, token, tool_call("recall_memory", {"query": "deploy", "top_k": 51}))
        huge_budget = await post(http, token, tool_call("recall_memory", {"query": "deploy", "token_budget": 32_001}))
        at_bounds = await post(
            http, token, tool_call("recall_memory", {"query": "d" * 2000, "top_k": 50, "token_budget": 32_000})
        )
    assert (settings.limits.max_query_chars, settings.limits.max_top_k, settings.limits.max_token_budget) == (
        2000,
        50,
        32_000,
    )
    assert schema["query"]["maxLength"] == 2000
    assert schema["top_k"]["maximum"] == 50
    assert schema["token_budget"]["maximum"] == 32_000
    for refused, says in (
        (long_query, "query is 2800 characters; the limit is 2000"),
        (deep, "top_k must be from 1 to 50"),
        (huge_budget, "token_budget must be a whole number of tokens from 1 to 32000"),
    ):
        assert tool_error_code(refused) == "invalid_argument"
        assert says in tool_result(refused)["content"][0]["text"]
    assert tool_error_code(at_bounds) is None


def test_the_budgets_and_caps_are_per_tenant_settings_from_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "HINDSIGHT_RATE_LIMIT_TENANTS",
        '{"acme": {"tenant_cpu_ms_per_second": 2000, "tenant_concurrency": 8, "concurrency_wait_seconds": 1}}',
    )
    settings = Settings(_env_file=None)  # type: ignore[call-arg]

    acme, other = tenant_limits(settings, "acme"), tenant_limits(settings, "globex")

    assert (acme.tenant_cpu_ms_per_second, acme.tenant_concurrency, acme.concurrency_wait_seconds) == (2000, 8, 1)
    assert acme.subject_cpu_ms_per_second == other.subject_cpu_ms_per_second == 100
    assert other.tenant_concurrency == TenantLimits().tenant_concurrency


def test_too_many_calls_is_a_retryable_rate_limit() -> None:
    assert TooManyCalls.code == CpuBudgetSpent.code == "rate_limited"


def test_a_settled_server_process_freezes_what_startup_made_and_collects_its_young_objects_less_often() -> None:
    """In a child interpreter (freezing is for good, not for the test process that builds apps again and again)."""
    code = (
        "import gc, sys\n"
        "from gateway.web.fairness import SWITCH_INTERVAL_SECONDS, YOUNG_COLLECTION_ALLOCATIONS, settle_interpreter\n"
        "before = gc.get_threshold()\n"
        "settle_interpreter()\n"
        "assert gc.get_freeze_count() > 0, gc.get_freeze_count()\n"
        "assert gc.get_threshold() == (YOUNG_COLLECTION_ALLOCATIONS, *before[1:]), gc.get_threshold()\n"
        "assert sys.getswitchinterval() == SWITCH_INTERVAL_SECONDS\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
