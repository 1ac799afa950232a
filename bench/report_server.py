"""The RESULTS.md sections of the server-side measurements (issue #33): "Server CPU per recall (raw client)"
(sequential, 8 raw clients, the floors, the server's own latency histograms beside the round trips), "Engine CPU
by cause" (perf), and "Several worker processes (estimate)". Rendered from `Results.raw`
(`bench.server_cpu.RawFigures`); `bench.report` places them and reads the targets from the same figures."""

from __future__ import annotations

import math

from bench import engine_causes, server_histogram
from bench.config import Results
from bench.profiling import CAUSE_RULES
from bench.raw_mcp import Window
from bench.report_tables import table
from bench.server_cpu import RawFigures, Split, one_process, split_of, worker_estimate
from bench.stats import Samples, ms

RECALL = "recall"  # hindsight_recall_latency_seconds: tool start to result, fine buckets
HTTP = "http:/mcp"  # hindsight_http_request_duration_seconds, POST /mcp: arrival to the end of the answer
TARGET_BOUNDS_MS = (4.0, 15.0)  # the server-side latency targets


def _f(value: float, digits: int = 2) -> str:
    return "–" if math.isnan(value) else f"{value:,.{digits}f}"


def _hist(window: Window | None, series: str, q: float) -> str:
    if window is None or series not in window.histograms or server_histogram.count(window.histograms[series]) <= 0:
        return "–"
    return ms(server_histogram.quantile(window.histograms[series], q))


def _bucket(window: Window | None, series: str, q: float) -> str:
    if window is None or series not in window.histograms:
        return "–"
    low, high = server_histogram.bucket_of(window.histograms[series], q)
    return "–" if math.isnan(low) else f"{low:g}-{high:g}"


def _rt(window: Window | None, q: str) -> str:
    if window is None or not len(window.round_trip):
        return "–"
    samples: Samples = window.round_trip
    return ms(samples.p50 if q == "p50" else samples.p99)


def main_env(results: Results) -> str:
    raw = getattr(results, "raw", [])
    return raw[0].env if raw else ""


def sdk_beside(results: Results, figures: RawFigures) -> tuple[Samples | None, float]:
    """The SDK client's figures for the same store and scope (all namespaces, the run's own settings): its
    sequential round trips, and the server CPU per recall of its 1-session concurrency level (largest size)."""
    if figures.in_scope != figures.store or figures.env != main_env(results):
        return None, math.nan
    size = next((s for s in results.sizes if s.size == figures.store), None)
    cpu = math.nan
    if figures.store == max(results.config.sizes):
        one = next((load for load in results.concurrency if load.clients == 1), None)
        cpu = one.server_cpu / one.requests * 1000 if one and one.requests else math.nan
    return (size.recall.get("mcp") if size else None), cpu


def _resolution_note(raw: list[RawFigures]) -> str:
    notes = []
    names = ((RECALL, "`hindsight_recall_latency_seconds`"), (HTTP, "`hindsight_http_request_duration_seconds`"))
    for series, name in names:
        buckets = next((w.histograms[series] for f in raw for w in f.windows.values() if series in w.histograms), None)
        if buckets is None:
            continue
        bounds = ", ".join(f"{b * 1000:g}" for b, _ in buckets if b <= 0.03)
        missing = [f"{t:g} ms" for t in TARGET_BOUNDS_MS if not server_histogram.resolves(buckets, t)]
        verdict = (
            f"too coarse to read {' and '.join(missing)}: a percentile there is only known to lie in its bucket"
            if missing
            else "fine enough to check the 4 ms and 15 ms targets exactly"
        )
        notes.append(f"{name} has bounds {bounds} ms (to 30 ms): {verdict}")
    return "; ".join(notes) + "." if notes else ""


def server_cpu_section(results: Results) -> list[str]:
    raw: list[RawFigures] = getattr(results, "raw", [])
    lines = [
        "## Server CPU per recall (raw client)",
        "",
        "`bench/server_cpu.py`: `hindsight serve` driven by raw JSON-RPC posts (`bench/raw_mcp.py`: httpx2, one "
        "keep-alive connection per client, the `initialize` handshake, then `tools/call`) from a child process, so "
        "the client's CPU is measured apart from the server's and from the benchmark's. Server CPU = user + system "
        "time of the server process (all its threads, `/proc/<pid>/stat`) over the window, per call; context "
        "switches from `/proc/<pid>/task/*/status`. Server-side latency = the server's own histograms read from "
        "`/metrics` before and after the window: `recall` is `hindsight_recall_latency_seconds` (tool start to "
        "result), `HTTP` is `hindsight_http_request_duration_seconds` for POST /mcp (arrival to the end of the "
        "answer); percentiles interpolated inside a bucket, as Prometheus does. The SDK columns repeat the "
        "`mcp.Client` figures of this run (the recall table and the 1-session concurrency level) for the same store.",
        "",
    ]
    if not raw:
        return [*lines, "Not measured in this run.", ""]
    note = _resolution_note(raw)
    if note:
        lines += [f"Histogram resolution: {note}", ""]
    sequential = [(f, f.window("recall"), *sdk_beside(results, f)) for f in raw]
    rows = [
        [
            f.label,
            f.env,
            f.allocator,
            str(f.search_threads),
            _f(w.server_ms) if w else "–",
            _f(w.switches_per_call, 0) if w else "–",
            _f(w.client_ms) if w else "–",
            _f(sdk_cpu),
            f.load,
        ]
        for f, w, _, sdk_cpu in sequential
    ]
    lines += ["### One raw client, sequential: server CPU", ""]
    lines += table(
        [
            "memories in scope",
            "server settings",
            "allocator",
            "search threads",
            "server CPU ms/recall",
            "context switches/recall",
            "client CPU ms/recall",
            "SDK client: server CPU ms/recall (1 session)",
            "load at start",
        ],
        rows,
        "lllrrrrrl",
    )
    rows = [
        [
            f.label,
            f.env,
            _hist(w, RECALL, 0.5),
            _hist(w, RECALL, 0.99),
            _bucket(w, RECALL, 0.5),
            _hist(w, HTTP, 0.5),
            _hist(w, HTTP, 0.99),
            _bucket(w, HTTP, 0.5),
            _rt(w, "p50"),
            _rt(w, "p99"),
            ms(sdk.p50) if sdk else "–",
            ms(sdk.p99) if sdk else "–",
        ]
        for f, w, sdk, _ in sequential
    ]
    lines += ["### One raw client, sequential: server-side latency beside the round trip", ""]
    lines += ["Milliseconds; 'bucket' = the histogram bucket the p50 falls in (its resolution).", ""]
    lines += table(
        [
            "memories in scope",
            "server settings",
            "server recall p50",
            "p99",
            "p50 bucket",
            "server HTTP p50",
            "p99",
            "p50 bucket",
            "raw round trip p50",
            "p99",
            "SDK round trip p50",
            "p99",
        ],
        rows,
        "llrrrrrrrrrr",
    )
    rows = []
    for f in raw:
        w = f.window("concurrent")
        if w is None:
            continue
        rows.append(
            [
                f.label,
                f.env,
                f"{w.calls:,}",
                _f(w.per_second, 0),
                _f(w.server_cores),
                _f(w.server_ms),
                _hist(w, RECALL, 0.5),
                _hist(w, RECALL, 0.99),
                _rt(w, "p50"),
                _rt(w, "p99"),
                _f(w.client_cpu_s / w.seconds if w.seconds else math.nan),
                _f(w.client_ms),
            ]
        )
    clients = raw[0].clients
    seconds = results.config.load_seconds
    lines += [f"### {clients} raw clients at once ({seconds:g} s, each its own connection)", ""]
    lines += table(
        [
            "memories in scope",
            "server settings",
            "recalls",
            "recalls/s",
            "server CPU (cores)",
            "server CPU ms/recall",
            "server recall p50",
            "p99",
            "round trip p50",
            "p99",
            "client CPU (cores)",
            "client CPU ms/recall",
        ],
        rows,
        "llrrrrrrrrrr",
    )
    return lines + floors(results, raw)


def floors(results: Results, raw: list[RawFigures]) -> list[str]:
    rows = []
    for f in raw:
        size = next((s for s in results.sizes if s.size == f.store), None)
        for name, label, series, sdk_path in (
            ("whoami", "`whoami` (tools/call)", "tool:whoami", "mcp_floor"),
            ("livez", "`GET /livez`", "http:/livez", "http_floor"),
        ):
            w = f.window(name)
            if w is None:
                continue
            sdk = size.recall.get(sdk_path) if size and f.env == main_env(results) else None
            rows.append(
                [
                    f"{f.store:,}",
                    f.env,
                    label,
                    _f(w.server_ms),
                    _hist(w, series, 0.5),
                    _rt(w, "p50"),
                    _f(w.client_ms),
                    ms(sdk.p50) if sdk else "–",
                ]
            )
    return [
        "### Floors from the raw client",
        "",
        "What any MCP call and any HTTP request cost the server. The floors of the recall table above "
        "(`whoami` over an `mcp.Client` session, `GET /livez` with httpx2) are round trips measured by the client: "
        "they include the client's own CPU (the SDK's most of all), so they are not the server's floors; these are. "
        "'server p50' from the server's histograms (`whoami`: tool start to result; `/livez`: the HTTP request); "
        "milliseconds.",
        "",
        *table(
            [
                "store",
                "server settings",
                "call",
                "server CPU ms/call",
                "server p50",
                "raw round trip p50",
                "client CPU ms/call",
                "SDK/httpx2 round trip p50 (recall table)",
            ],
            rows,
            "lllrrrrr",
        ),
    ]


def causes_section(results: Results) -> list[str]:
    profiles = [f for f in getattr(results, "raw", []) if f.causes is not None]
    lines = ["## Engine CPU by cause", ""]
    if not profiles:
        return [*lines, "Not measured in this run.", ""]
    measured = [f for f in profiles if f.causes and f.causes.samples]
    first = profiles[0].causes
    assert first is not None
    lines += [
        "One raw client recalling in a loop for "
        f"{results.config.profile_seconds:g} s while the server process is sampled ({first.recorder}). Each sample "
        "goes to the first rule of `bench/profiling.py` (`CAUSE_RULES`) its stack matches; within each thread "
        "group (the engine's `edge-search` threads, the Python threads, others) the sampled shares are scaled to "
        "that group's `/proc` CPU over the same window, so each column sums to the server's CPU per recall (the "
        "sampler's own overhead included). 'search threads %' = share of the engine threads' samples ('–': they "
        "did no work: the engine searched in the calling threads).",
        "",
    ]
    for f in profiles:
        if f.causes and f.causes.note:
            lines += [f"- {f.label}, {f.env}: {f.causes.note}"]
    if any(f.causes and f.causes.note for f in profiles):
        lines.append("")
    if not measured:
        return lines
    causes: list[str] = []
    for f in measured:
        assert f.causes is not None
        causes += [c for c in f.causes.causes() if c not in causes]
    order = [cause for cause, _, _ in CAUSE_RULES]
    causes.sort(key=lambda c: order.index(c) if c in order else len(order))
    header = ["cause"]
    for f in measured:
        header += [f"{f.label}, {f.env}: search threads %", "ms/recall"]
    rows = []
    for cause in causes:
        cells = [cause]
        for f in measured:
            c = f.causes
            assert c is not None
            engine_share = c.share(cause, engine_causes.GROUPS[0]) if c.samples.get(engine_causes.GROUPS[0]) else None
            cells += ["–" if engine_share is None else f"{engine_share:.0f} %", _f(c.total_ms(cause))]
        rows.append(cells)
    native = ["inside the engine's native code, any thread (pyo3 conversions aside)"]
    for f in measured:
        assert f.causes is not None
        native += ["", _f(f.causes.native_ms())]
    rows.append(native)
    for group in engine_causes.GROUPS:
        cells = [f"total: {group} (`/proc`)"]
        for f in measured:
            assert f.causes is not None
            cells += ["", _f(f.causes.cpu_ms.get(group, 0.0))]
        rows.append(cells)
    total = ["total (`/proc`)"]
    for f in measured:
        assert f.causes is not None
        total += ["", _f(sum(f.causes.cpu_ms.values()))]
    rows.append(total)
    lines += table(header, rows, "l" + "rr" * len(measured))
    top = measured[0].causes
    assert top is not None
    lines += [f"Most sampled leaf functions ({measured[0].label}, {measured[0].env}), share of all samples:", ""]
    lines += table(["leaf", "share"], [[f"`{n}`", f"{s:.1f} %"] for n, s in top.top_leaves[:10]], "lr")
    return lines


def workers_section(results: Results) -> list[str]:
    largest = max(results.config.sizes)
    raw = [f for f in getattr(results, "raw", []) if f.env == main_env(results) and f.store == largest]
    lines = ["## Several worker processes (estimate)", ""]
    splits: list[tuple[RawFigures, Split]] = []
    for f in raw:
        w = f.window("concurrent")
        split = split_of(w, f.causes) if w else None
        if split is not None:
            splits.append((f, split))
    if not splits:
        return [*lines, "Not measured in this run.", ""]
    lines += [
        "An estimate, not a measurement: the embedded engine cannot be shared by processes (qdrant-client's local "
        "mode and the edge shard lock their directory), so several gateway workers mean one Qdrant server. From "
        f"the {raw[0].clients} raw clients' window, the server's CPU per recall, split ({splits[0][1].source}): "
        "E = the engine's native work, P = the rest (the interpreter, its libraries, the engine's conversions to "
        "Python objects: GIL-bound, one core at most per process). The embedded engine holds the GIL for the whole "
        "of a call (two threads querying one shard use 1.0 core of 2), so in one embedded process E is GIL-bound "
        "too; in a Qdrant server it runs in that server's threads. Then, on C cores:",
        "",
        "- one embedded process: 1000 / (P + E) recalls/s, whatever C;",
        "- N gateway workers + one Qdrant server: min(N × 1000 / P, C × 1000 / (P + k × E)) recalls/s, where k is "
        "what the engine work costs in Qdrant plus the gRPC encoding on both sides relative to the embedded engine "
        "(not measured: k = 1 is an upper bound, k = 1.5 a guess). N = C here.",
        "",
    ]
    rows = []
    for f, split in splits:
        for cores in (2, 4, 8, 16):
            rows.append(
                [
                    f.label,
                    _f(split.python_ms),
                    _f(split.engine_ms),
                    str(cores),
                    _f(one_process(split), 0),
                    _f(worker_estimate(split, cores, cores, 1.0), 0),
                    _f(worker_estimate(split, cores, cores, 1.5), 0),
                ]
            )
    lines += table(
        [
            "memories in scope",
            "P ms/recall",
            "E ms/recall",
            "cores C",
            "one embedded process, recalls/s",
            "C workers + Qdrant, k = 1",
            "k = 1.5",
        ],
        rows,
        "lrrrrrr",
    )
    return lines
