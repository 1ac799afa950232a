"""Average-linkage agglomeration (memory.consolidation.clusters): the incremental version merges exactly the pairs
the plain one does, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from memory.consolidation.clusters import _average_linkage


def plain_average_linkage(sim: np.ndarray, cut: float, max_size: int) -> list[list[int]]:
    """The textbook loop: scan the whole matrix for the best pair at every step (first row, then first column)."""
    s = sim.astype(np.float64).copy()
    np.fill_diagonal(s, -np.inf)
    groups: list[list[int]] = [[i] for i in range(len(s))]
    alive = np.ones(len(s), dtype=bool)
    while True:
        masked = np.where(alive[:, None] & alive[None, :], s, -np.inf)
        a, b = divmod(int(np.argmax(masked)), len(s))
        if masked[a, b] < cut:
            break
        if len(groups[a]) + len(groups[b]) > max_size:
            s[a, b] = s[b, a] = -np.inf
            continue
        na, nb = len(groups[a]), len(groups[b])
        s[a, :] = (na * s[a, :] + nb * s[b, :]) / (na + nb)
        s[:, a] = s[a, :]
        s[a, a] = -np.inf
        groups[a] += groups[b]
        groups[b] = []
        alive[b] = False
    return sorted(sorted(g) for g, keep in zip(groups, alive, strict=True) if keep)


@pytest.mark.parametrize("seed", range(40))
def test_the_incremental_agglomeration_merges_what_a_full_scan_merges_ties_included(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 50))
    values = rng.random((n, n))
    if seed % 2:
        values = np.round(values * 4) / 4  # many equal similarities: the order of merges decides
    sim = np.triu(values, 1)
    sim = sim + sim.T
    for cut, max_size in ((0.22, 12), (0.5, 3), (0.1, n), (0.75, 5)):
        assert sorted(_average_linkage(sim, cut, max_size)) == plain_average_linkage(sim, cut, max_size)
