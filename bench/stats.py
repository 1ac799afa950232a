"""Latency samples and their summaries (nearest-rank percentiles, milliseconds)."""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from dataclasses import dataclass, field


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (q in 0..100)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def paired_bootstrap_interval(
    differences: list[float], level: float = 0.95, resamples: int = 4_000, seed: int = 0
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of paired differences (one per question, say): resamples
    drawn with replacement from a fixed seed, so a report is reproducible. (nan, nan) for no differences."""
    if not differences:
        return math.nan, math.nan
    draw = random.Random(seed).choices
    size = len(differences)
    means = sorted(sum(draw(differences, k=size)) / size for _ in range(resamples))
    tail = (1 - level) / 2
    return means[int(tail * resamples)], means[min(resamples - 1, int((1 - tail) * resamples))]


@dataclass
class Samples:
    """Durations in seconds; summaries in milliseconds."""

    values: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)  # e.g. write statuses

    def add(self, seconds: float) -> None:
        self.values.append(seconds)

    def __len__(self) -> int:
        return len(self.values)

    def _sorted(self) -> list[float]:
        return sorted(self.values)

    @property
    def p50(self) -> float:
        return percentile(self._sorted(), 50) * 1000

    @property
    def p95(self) -> float:
        return percentile(self._sorted(), 95) * 1000

    @property
    def p99(self) -> float:
        return percentile(self._sorted(), 99) * 1000

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values) * 1000 if self.values else math.nan


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.nan


def ms(value: float) -> str:
    if math.isnan(value):
        return "–"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def times(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.1f}×"


def size_label(count: int) -> str:
    if count >= 1000 and count % 1000 == 0:
        return f"{count // 1000}k"
    return str(count)
