"""`bench.previous`: a run reads the figures of the report it replaces, and the quality figures kept beside them."""

from __future__ import annotations

from bench.previous import read_previous, read_quality

REPORT = """# hindsight benchmark results

## Machine

|  |  |
| --- | --- |
| date | 2026-12-01 00:18 UTC |
| commit | 3fa07ad |
| load average (1/5/15 min) at start | 1.16 / 1.19 / 1.45 |

## Recall latency by corpus size

| memories | path | p50 | p95 | p99 | mean | n |
| --- | --- | ---: | ---: | ---: | ---: | ---: |
| 1k | (a) HTTP MCP: `mcp.Client` → uvicorn subprocess | 8.36 | 12.5 | 19.1 | 9.11 | 300 |
| 1k | (b) in process: `MemoryService.recall` | 5.19 | 6.43 | 7.24 | 5.33 | 300 |
| 100k | (a) HTTP MCP: `mcp.Client` → uvicorn subprocess | 16.6 | 22.0 | 23.8 | 17.2 | 300 |

## Concurrency (HTTP MCP clients)

| clients | requests | recalls/s | p50 ms | p95 ms | p99 ms | server CPU (cores) | server CPU ms/recall |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 649 | 65 | 15.0 | 19.7 | 23.4 | 1.08 | 16.7 |
| 32 | 8,550 | 1,084 | 363 | 454 | 491 | 1.22 | 14.5 |

## Recall quality: LoCoMo

`hindsight eval locomo --data locomo10-dev.json`, 2026-12-02, commit 8302dd1, embedder wordllama, default weights.

| format | system | recall@5 | recall@10 | ndcg@10 | mrr | median ms/query |
| --- | --- | --- | --- | --- | --- | --- |
| plain text | hindsight | 0.717 | 0.781 | 0.631 | 0.604 | 25.28 |
| plain text | plain BM25 | 0.471 | 0.547 | 0.400 | 0.370 | 1.71 |

## Recall quality: MemoryBank, Chinese

`hindsight eval memorybank --data memorybank`, 2026-12-03, commit abc1234, embedder wordllama, default weights.

| system | recall@1 | recall@5 | recall@10 | MRR | median ms/query |
| --- | ---: | ---: | ---: | ---: | ---: |
| hindsight (MCP) | 0.584 | 0.941 | 0.971 | 0.830 | 20.49 |
"""


def test_a_run_reads_the_mcp_latency_and_throughput_of_the_report_it_replaces() -> None:
    previous = read_previous(REPORT)

    assert (previous.commit, previous.date, previous.load) == ("3fa07ad", "2026-12-01 00:18 UTC", "1.16 / 1.19 / 1.45")
    assert previous.mcp == {"1k": (8.36, 19.1), "100k": (16.6, 23.8)}
    assert previous.concurrency == {1: (65.0, 16.7), 32: (1084.0, 14.5)}


def test_the_quality_figures_are_read_from_the_kept_eval_sections_with_their_date_and_commit() -> None:
    quality = read_quality(REPORT)

    assert (quality.locomo_recall10, quality.locomo_note) == (0.781, "2026-12-02, commit 8302dd1")
    assert (quality.memorybank_recall5, quality.memorybank_mrr) == (0.941, 0.830)
    assert quality.memorybank_note == "2026-12-03, commit abc1234"


def test_a_first_run_without_a_report_reads_nothing() -> None:
    previous, quality = read_previous(""), read_quality("")

    assert (previous.mcp, previous.concurrency, previous.commit) == ({}, {}, "")
    assert quality.locomo_recall10 is None and quality.memorybank_recall5 is None


def test_the_throughput_and_cpu_of_a_report_that_already_had_previous_columns_are_read_by_their_header() -> None:
    report = """## Concurrency (HTTP MCP clients)

| clients | requests | recalls/s | previous recalls/s | p50 ms | p95 ms | p99 ms | server CPU (cores) | server CPU ms/recall | previous server CPU ms/recall | client CPU (cores) | client CPU ms/recall |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 287 | 29 | 65 | 34.2 | 46.1 | 55.5 | 0.90 | 31.5 | 16.7 | 0.14 | 4.8 |
| 32 | 405 | 38 | 84 | 814 | 1041 | 1113 | 1.10 | 28.7 | 14.5 | 0.16 | 4.1 |
"""  # noqa: E501

    assert read_previous(report).concurrency == {1: (29.0, 31.5), 32: (38.0, 28.7)}
