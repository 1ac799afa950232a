"""The raw-client measurement of issue #33 (bench.raw_mcp, bench.server_histogram, bench.engine_causes): a real
`hindsight serve` driven by the raw client from a child process, and the pure parts (histogram percentiles, the
cause rules) on fixed inputs. Structure only: the figures of a test run on a shared machine mean nothing."""

from __future__ import annotations

import math
from pathlib import Path

import anyio
import pytest

from bench import engine_causes, server_histogram
from bench.profiling import OTHER_CAUSE, WAKE_UPS
from bench.raw_mcp import Plan, RawSession, run_in_child
from bench.server import ServerProcess
from tenancy import mint_token

SECRET = "bench-raw-test-secret-0123456789abcdef"
NAMESPACE = "user:raw"


def _token(subject: str) -> str:
    return mint_token(SECRET, tenant="raw", subject=subject, read=[NAMESPACE], write=[NAMESPACE], ttl_seconds=600)


@pytest.mark.anyio
async def test_the_raw_client_measures_the_server_from_a_child_process(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", SECRET, tmp_path / "server.log")
    await anyio.to_thread.run_sync(server.start)
    try:
        async with RawSession(server.url, _token("writer")) as session:
            assert (await session.initialize())["serverInfo"]
            for i in range(12):
                await session.call("write_memory", {"content": f"The user deploys service {i} to region eu-{i}."})
        kind, _ = engine_causes.choose_recorder()
        plan = Plan(
            server.url,
            server.pid,
            _token("reader"),
            ("where does the user deploy?", "which region is service 3 in?"),
            count=6,
            warmup=2,
            floors=5,
            clients=2,
            seconds=0.3,
            profile_seconds=0.3 if kind else 0.0,
            recorder=kind,
            profile_out=str(tmp_path / "causes.data"),
        )
        drive = await anyio.to_thread.run_sync(run_in_child, plan)
    finally:
        await anyio.to_thread.run_sync(server.stop)

    recall = drive.windows["recall"]
    assert recall.calls == len(recall.round_trip) == 6 and recall.server_cpu_s >= 0 and recall.client_cpu_s > 0
    assert server_histogram.count(recall.histograms["recall"]) == 6  # the server's own count of the window
    assert server_histogram.count(drive.windows["whoami"].histograms["tool:whoami"]) == 5
    assert server_histogram.count(drive.windows["livez"].histograms["http:/livez"]) == 5
    loaded = drive.windows["concurrent"]
    assert loaded.calls >= 2 and server_histogram.count(loaded.histograms["recall"]) == loaded.calls
    if kind:
        assert not drive.note, drive.note
        profile = engine_causes.CauseProfile("test", recalls=drive.windows["profile"].calls)
        engine_causes.analyse(profile, tmp_path / "causes.data", kind)
        assert profile.samples and profile.top_leaves


BUCKETS: server_histogram.Buckets = ((0.001, 0.0), (0.004, 50.0), (0.015, 99.0), (0.02, 100.0), (math.inf, 100.0))


def test_percentiles_come_from_the_buckets_and_say_their_resolution() -> None:
    text = "\n".join(
        f'hindsight_recall_latency_seconds_bucket{{le="{"+Inf" if math.isinf(b) else b}"}} {n}' for b, n in BUCKETS
    )
    parsed = server_histogram.parse(text + "\nhindsight_recall_latency_seconds_count 100.0\n")
    assert parsed["recall"] == BUCKETS
    assert math.isclose(server_histogram.quantile(BUCKETS, 0.5), 4.0)
    assert math.isclose(server_histogram.quantile(BUCKETS, 0.25), 2.5)  # linear inside (1, 4]
    assert server_histogram.bucket_of(BUCKETS, 0.99) == (4.0, 15.0)
    assert server_histogram.share_within(BUCKETS, 15) == 0.99 and server_histogram.share_within(BUCKETS, 5) is None
    earlier = ((0.001, 0.0), (0.004, 10.0), (0.015, 10.0), (0.02, 10.0), (math.inf, 10.0))
    assert server_histogram.count(server_histogram.delta({"recall": BUCKETS}, {"recall": earlier})["recall"]) == 90


@pytest.mark.parametrize(
    ("frames", "cause"),
    [
        pytest.param([("finish_task_switch", "[kernel.kallsyms]"), ("__x64_sys_futex", "[kernel.kallsyms]")],
                     WAKE_UPS, id="futex"),
        pytest.param([("free", "libc.so.6"), ("<serde_json::de::X>::parse", "qdrant_edge.abi3.so")],
                     "malloc / free (jemalloc or glibc)", id="malloc-under-serde"),
        pytest.param([("memcpy", "libc.so.6"), ("fill_idf_statistics", "qdrant_edge.abi3.so")],
                     "BM25: IDF counted over the filter", id="idf"),
        pytest.param([("_PyEval_EvalFrameDefault", "libpython3.11.so.1.0")], "Python interpreter (libpython)",
                     id="interpreter"),
        pytest.param([("??", "")], OTHER_CAUSE, id="unknown"),
    ],
)  # fmt: skip
def test_a_sample_goes_to_the_first_rule_its_stack_matches(frames: list[engine_causes.Frame], cause: str) -> None:
    assert engine_causes.cause_of(frames) == cause
