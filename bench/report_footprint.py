"""The RESULTS.md "Memory and disk" section: the server's RSS and the data directory's size at each corpus size,
and their growth scaled to 100k memories."""

from __future__ import annotations

import math

from bench.config import Results
from bench.report_tables import table
from bench.stats import size_label


def _mib(kib: float) -> str:
    return "–" if math.isnan(kib) else f"{kib / 1024:.0f} MiB"


def _bytes_mib(value: float) -> str:
    return "–" if math.isnan(value) else f"{value / 1024 / 1024:.1f} MiB"


def memory_disk(results: Results) -> list[str]:
    base = results.baseline_rss
    rows = [
        [
            "0 (empty store)",
            _mib(base.get("VmRSS", math.nan)),
            _mib(base.get("VmRSS", math.nan)),
            _mib(base.get("RssAnon", math.nan)),
            _mib(base.get("RssFile", math.nan)),
            _bytes_mib(results.baseline_disk),
            "–",
            "–",
            "–",
            "–",
        ]
    ]
    for size in results.sizes:
        loaded = size.rss_loaded
        growth = loaded.get("VmRSS", 0) - base.get("VmRSS", 0)
        disk_growth = size.disk.get("total", 0) - results.baseline_disk
        scale = 100_000 / size.size
        rows.append(
            [
                size_label(size.size),
                _mib(size.rss_ready.get("VmRSS", math.nan)),
                _mib(loaded.get("VmRSS", math.nan)),
                _mib(loaded.get("RssAnon", math.nan)),
                _mib(loaded.get("RssFile", math.nan)),
                _bytes_mib(size.disk.get("total", math.nan)),
                _bytes_mib(size.disk.get("segments", math.nan)),
                _bytes_mib(size.disk.get("wal", math.nan)),
                _mib(growth * scale),
                _bytes_mib(disk_growth * scale),
            ]
        )
    return [
        "## Memory and disk",
        "",
        "Server process RSS (`/proc/<pid>/status`) right after it is ready and after the recall and concurrency "
        "phases; disk = allocated bytes of the data directory after `maintain()`. 'Per 100k' = growth over the "
        "empty store, scaled to 100k memories.",
        "",
        *table(
            [
                "memories",
                "RSS ready",
                "RSS after recalls",
                "RssAnon",
                "RssFile",
                "disk",
                "segments",
                "WAL",
                "RSS per 100k",
                "disk per 100k",
            ],
            rows,
        ),
    ]
