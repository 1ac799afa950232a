"""Observability through the real app: spans of one recall (continuing the caller's traceparent), Prometheus
metrics after a few calls (the latency of every tool call by tool and outcome), every HTTP response counted and
timed by method, route template and status (refusals included), the process and Python metrics without `_created`
series, and the admin-only debug views."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.services.maintenance import sample_memory_counts
from gateway.web.app import create_app
from gateway.web.observability import HttpRequestMetrics
from memory.clock import ManualClock
from ops.config import TenantLimits
from ops.metrics import Metrics
from tests.conftest import BASE_URL, Mint, data, make_settings, mcp_session, running

pytestmark = pytest.mark.anyio

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def observed_app(tmp_path: Path, clock: ManualClock, exporter: InMemorySpanExporter) -> AsyncIterator[Starlette]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = make_settings(tmp_path / "data", debug_views_enabled=True)
    async with running(create_app(settings, clock=clock, tracer_provider=provider)) as app:
        yield app


async def test_one_recall_is_a_tree_of_spans_continuing_the_callers_trace(
    observed_app: Starlette, mint: Mint, exporter: InMemorySpanExporter
) -> None:
    token = mint()
    async with mcp_session(observed_app, token) as client:
        data(await client.call_tool("write_memory", {"content": "The user's cat is named Miso"}))
    exporter.clear()
    headers = {"Authorization": f"Bearer {token}", "traceparent": f"00-{TRACE_ID}-{PARENT_SPAN}-01"}
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=observed_app), base_url=BASE_URL, headers=headers)
    async with http, Client(streamable_http_client(f"{BASE_URL}/mcp", http_client=http)) as client:
        exporter.clear()  # only the recall request's spans
        data(await client.call_tool("recall_memory", {"query": "cat name", "top_k": 3}))
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    [tool] = [s for s in spans if s.name == "tool recall_memory"]
    assert tool.parent is not None
    server = by_id[tool.parent.span_id]  # the HTTP request that carried the tools/call

    def children(parent: object, name: str) -> list[object]:
        return [s for s in spans if s.name == name and s.parent and s.parent.span_id == parent.context.span_id]  # type: ignore[attr-defined]

    assert server.name == "POST /mcp"
    assert format(server.context.trace_id, "032x") == TRACE_ID
    assert server.parent is not None and format(server.parent.span_id, "016x") == PARENT_SPAN
    assert all(s.context.trace_id == server.context.trace_id for s in spans)
    assert len(children(server, "auth.verify_token")) == 1
    assert len(children(tool, "embedder.embed_query")) == 1
    searches = children(tool, "vector_store.search")
    assert len(searches) == 2  # by meaning, then by keywords (memory.recall.steps.searched)
    assert tool.attributes is not None
    assert tool.attributes["hindsight.tenant"] == "acme"
    assert tool.attributes["hindsight.hits"] == 1
    assert tool.attributes["hindsight.outcome"] == "ok"
    assert all(s.attributes and s.attributes["db.system"] == "qdrant_edge" for s in searches)  # type: ignore[attr-defined]
    for finished in spans:  # no content and no token in any attribute
        values = " ".join(str(v) for v in (finished.attributes or {}).values())
        assert "Miso" not in values and token not in values


async def test_metrics_show_latency_histograms_and_counters_after_calls(observed_app: Starlette, mint: Mint) -> None:
    async with mcp_session(observed_app, mint()) as client:
        data(await client.call_tool("write_memory", {"content": "Quarterly planning is in March"}))
        data(await client.call_tool("write_memory", {"content": "Quarterly planning is in March"}))
        data(await client.call_tool("recall_memory", {"query": "planning"}))
        await client.call_tool("forget_memory", {"id": "01890a5d-ac96-774b-bcce-b302099a8057"})
        data(await client.call_tool("write_memory", {"content": "Replay me", "request_id": "m-1"}))
        data(await client.call_tool("write_memory", {"content": "Replay me", "request_id": "m-1"}))
        assert (await client.call_tool("recall_memory", {"query": "planning", "surplus": 1})).is_error
        assert (await client.call_tool("write_memory", {"content": "x", "surplus": 1})).is_error
        data(await client.call_tool("whoami", {}))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=observed_app), base_url=BASE_URL) as http:
        response = await http.get("/metrics")
    text = response.text
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert 'hindsight_recall_latency_seconds_bucket{le="0.001"}' in text
    assert 'hindsight_recall_latency_seconds_bucket{le="5.0"} 1.0' in text
    assert "hindsight_recall_latency_seconds_count 1.0" in text  # the refused recall is not a recall latency
    assert "hindsight_write_latency_seconds" not in text  # write_memory: tool="write_memory", outcome="ok" below
    assert tool_durations(text) == {  # every tool call, by tool and outcome: the refused ones apart
        ("write_memory", "ok"): 4,
        ("write_memory", "invalid_argument"): 1,
        ("recall_memory", "ok"): 1,
        ("recall_memory", "invalid_argument"): 1,
        ("forget_memory", "not_found"): 1,
        ("whoami", "ok"): 1,
    }
    assert 'hindsight_tool_calls_total{outcome="ok",tool="write_memory"} 4.0' in text
    assert 'hindsight_tool_calls_total{outcome="not_found",tool="forget_memory"} 1.0' in text
    assert 'hindsight_writes_total{action="created"} 2.0' in text
    assert 'hindsight_writes_total{action="skipped"} 1.0' in text
    assert 'hindsight_idempotent_replays_total{tool="write_memory"} 1.0' in text
    assert "tenant=" not in text
    runtime = observed_app.state.runtime
    await sample_memory_counts(runtime, observed_app.state.telemetry.metrics)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=observed_app), base_url=BASE_URL) as http:
        sampled = (await http.get("/metrics")).text
    assert 'hindsight_memories{kind="episodic"} 2.0' in sampled
    assert 'hindsight_memories{kind="semantic"} 0.0' in sampled


def tool_durations(text: str) -> dict[tuple[str, str], float]:
    """`hindsight_tool_call_duration_seconds` as {(tool, outcome): count}, read with Prometheus' parser; the buckets
    of each series checked to be cumulative up to that count."""
    [family] = [f for f in text_string_to_metric_families(text) if f.name == "hindsight_tool_call_duration_seconds"]
    counts = {(s.labels["tool"], s.labels["outcome"]): s.value for s in family.samples if s.name.endswith("_count")}
    for (tool, outcome), count in counts.items():
        buckets = [
            s.value
            for s in family.samples
            if s.name.endswith("_bucket") and (s.labels["tool"], s.labels["outcome"]) == (tool, outcome)
        ]
        assert buckets == sorted(buckets) and buckets[-1] == count
    return counts


async def test_debug_views_serve_admins_only(observed_app: Starlette, mint: Mint) -> None:
    async with mcp_session(observed_app, mint()) as client:
        for i in range(3):
            data(await client.call_tool("write_memory", {"content": f"debug fact {i}"}))
        data(await client.call_tool("recall_memory", {"query": "debug fact"}))
    admin = mint(sub="ops", read=[], write=[], admin=True)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=observed_app), base_url=BASE_URL) as http:
        anonymous = await http.get("/debug/stats")
        user = await http.get("/debug/stats", headers={"Authorization": f"Bearer {mint()}"})
        stats = await http.get("/debug/stats", headers={"Authorization": f"Bearer {admin}"})
        latest = await http.get(
            "/debug/memories?namespace=user:1&limit=2", headers={"Authorization": f"Bearer {admin}"}
        )
        other_tenant = await http.get(
            "/debug/memories?namespace=user:1&limit=2",
            headers={"Authorization": f"Bearer {mint(tenant='globex', sub='ops', admin=True)}"},
        )
    assert anonymous.status_code == 401
    assert user.status_code == 403
    assert stats.status_code == 200
    assert stats.json()["recall"]["count"] == 1
    assert stats.json()["write"]["p99_ms"] is not None
    assert [m["content"] for m in latest.json()["memories"]] == ["debug fact 2", "debug fact 1"]
    assert other_tenant.json()["memories"] == []


async def test_debug_views_are_absent_unless_enabled(app: Starlette, mint: Mint) -> None:
    admin = mint(sub="ops", admin=True)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        response = await http.get("/debug/stats", headers={"Authorization": f"Bearer {admin}"})
    assert response.status_code == 404


async def test_metrics_count_stored_memories_skipped_because_they_could_not_be_decoded(
    app: Starlette, mint: Mint
) -> None:
    import qdrant_edge as qe

    async with mcp_session(app, mint()) as client:
        written = data(await client.call_tool("write_memory", {"content": "The deploy target is AWS eu-west-1"}))
        shard = app.state.runtime.store._shard  # under the engine: what an older version might have stored
        shard.update(qe.UpdateOperation.set_payload([written["id"]], {"importance": "high"}))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
            before = _sample((await http.get("/metrics")).text, "hindsight_undecodable_memories_total")
            listed = data(await client.call_tool("list_memories", {}))
            scraped = (await http.get("/metrics")).text
            after = _sample(scraped, "hindsight_undecodable_memories_total")
    assert listed["memories"] == []
    assert after >= before + 1
    assert "# TYPE hindsight_undecodable_memories_total counter" in scraped  # counts since start: rate() applies


def _sample(text: str, name: str) -> float:
    return next(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


# --- HTTP responses, process metrics, no _created ----------------------------------------------------------------

JSON_RPC = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
WHOAMI = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}


def counted(text: str, family: str, sample: str, labels: tuple[str, ...]) -> dict[tuple[str, ...], float]:
    """The `sample` series of metric `family` as {its `labels`' values: count}, read with Prometheus' parser."""
    [found] = [f for f in text_string_to_metric_families(text) if f.name == family]
    return {tuple(s.labels[label] for label in labels): s.value for s in found.samples if s.name.endswith(sample)}


def http_durations(text: str) -> dict[tuple[str, ...], float]:
    """`hindsight_http_request_duration_seconds` as {(method, route, status_class): count}."""
    return counted(text, "hindsight_http_request_duration_seconds", "_count", ("method", "route", "status_class"))


def http_responses(text: str) -> dict[tuple[str, ...], float]:
    """`hindsight_http_requests_total` as {(route, code, status_class): count}."""
    return counted(text, "hindsight_http_requests", "_total", ("route", "code", "status_class"))


async def test_every_http_response_is_counted_by_route_template_code_and_class_refusals_included(
    tmp_path: Path, clock: ManualClock, mint: Mint
) -> None:
    one_read = TenantLimits(subject_read_per_minute=60, tenant_read_per_minute=600, burst_seconds=1)
    settings = make_settings(tmp_path / "data", max_request_bytes=1024, rate_limit_default=one_read)
    authorized = {**JSON_RPC, "authorization": f"Bearer {mint()}"}
    async with (
        running(create_app(settings, clock=clock)) as app,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http,
    ):
        statuses = [
            (await http.post("/mcp", json=WHOAMI, headers=JSON_RPC)).status_code,  # no token
            (await http.post("/mcp/", json=WHOAMI, headers=JSON_RPC)).status_code,  # no token, the other spelling
            (await http.post("/mcp", content=b" " * 3000, headers=authorized)).status_code,  # over 1,024 bytes
            (await http.post("/mcp", json=WHOAMI, headers=authorized)).status_code,  # the one read of the bucket
            (await http.post("/mcp", json=WHOAMI, headers=authorized)).status_code,  # over the rate limit
            (await http.get("/mcp", headers=authorized)).status_code,  # no stream on a stateless server
            (await http.get("/livez")).status_code,
            (await http.get("/tenants/acme/secrets")).status_code,  # no such route: never its raw path
            (await http.request("BREW", "/mcp", headers=authorized)).status_code,  # a method no one knows
        ]
        scraped = (await http.get("/metrics")).text
        rescraped = (await http.get("/metrics")).text
    assert statuses == [401, 401, 413, 200, 429, 405, 200, 404, 405]
    assert http_responses(scraped) == {
        ("/mcp", "401", "4xx"): 2,
        ("/mcp", "413", "4xx"): 1,
        ("/mcp", "200", "2xx"): 1,
        ("/mcp", "429", "4xx"): 1,
        ("/mcp", "405", "4xx"): 2,
        ("/livez", "200", "2xx"): 1,
        ("other", "404", "4xx"): 1,
    }
    assert http_durations(scraped) == {  # each request timed too, its method a known one or "other"
        ("POST", "/mcp", "4xx"): 4,  # 401, 401, 413, 429
        ("POST", "/mcp", "2xx"): 1,
        ("GET", "/mcp", "4xx"): 1,
        ("GET", "/livez", "2xx"): 1,
        ("GET", "other", "4xx"): 1,
        ("other", "/mcp", "4xx"): 1,
    }
    assert http_responses(rescraped)[("/metrics", "200", "2xx")] == 1  # a scrape is counted once it is answered
    assert http_durations(rescraped)[("GET", "/metrics", "2xx")] == 1
    assert "/tenants/acme" not in rescraped and "BREW" not in rescraped


async def test_an_exception_escaping_the_app_is_counted_as_the_500_the_client_gets() -> None:
    async def boom(request: Request) -> Response:
        raise RuntimeError("a bug")

    metrics = Metrics()
    routes = [Route("/items/{item_id}", boom)]
    app = Starlette(routes=routes, middleware=[Middleware(HttpRequestMetrics, metrics=metrics, routes=routes)])
    transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx2.AsyncClient(transport=transport, base_url=BASE_URL) as http:
        response = await http.get("/items/42")
    assert response.status_code == 500
    text = metrics.render().decode()
    assert http_responses(text) == {("/items/{item_id}", "500", "5xx"): 1}
    assert http_durations(text) == {("GET", "/items/{item_id}", "5xx"): 1}


async def test_metrics_carry_process_and_python_metrics_and_no_created_series(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint()) as client:
        data(await client.call_tool("write_memory", {"content": "Counters without their _created twins"}))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http:
        text = (await http.get("/metrics")).text
    families = {family.name: family for family in text_string_to_metric_families(text)}
    [resident] = families["process_resident_memory_bytes"].samples
    assert resident.value > 0
    assert "process_cpu_seconds" in families and "process_open_fds" in families
    assert "python_info" in families and "python_gc_objects_collected" in families
    assert 'hindsight_tool_calls_total{outcome="ok",tool="write_memory"} 1.0' in text
    assert "hindsight_recall_latency_seconds_count" in text
    assert [line for line in text.splitlines() if "_created" in line] == []
