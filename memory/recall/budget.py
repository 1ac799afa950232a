"""Fitting to a token budget: which items of a list, taken in order, a budget holds.

The routines know nothing of how an item reads or how tokens are counted: the caller passes what keeping an item
costs (given those kept before it: a line that opens a day costs its day's header too) and whether an assembled
whole fits. They serve every answer a budget bounds (`gateway.recall_answer`):

- `fill`: each item in order kept when its cost fits what is left, so a later shorter one may still fit; or, `gapless`,
  none after the first that does not (a conversation's turns, newest first: no gap in them).
- `trim`: how many of the items kept, in the order they were kept, still fit once assembled: a tokenizer's counts are
  not additive (two lines may merge at their join), so the last kept are taken back until the whole fits exactly.
- `longest_fitting`: the longest start of a text that fits, by bisection (a memory cut to fill what is left).

The engine's own recall depth (`memory.recall.ranking.select_hits`) is not a fit: it picks candidates until their
estimated tokens reach the budget, the one that reaches it included, for the caller to fit exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")


def fill(
    items: Iterable[T], cost: Callable[[Sequence[T], T], int], budget: int, spent: int = 0, *, gapless: bool = False
) -> tuple[list[T], int]:
    """The items kept, in order, and the tokens spent: an item is kept when `cost(kept so far, item)` fits within
    `budget` after `spent`; after the first that does not, the rest are skipped if `gapless`, else still tried."""
    kept: list[T] = []
    for item in items:
        price = cost(kept, item)
        if spent + price <= budget:
            kept.append(item)
            spent += price
        elif gapless:
            break
    return kept, spent


def trim(kept: int, fits: Callable[[int], bool]) -> int:
    """How many of `kept` items, the first ones, fit once assembled: the most for which `fits(count)`, trying from
    all of them down; 0 when none does (not asked)."""
    while kept and not fits(kept):
        kept -= 1
    return kept


def longest_fitting(length: int, fits: Callable[[int], bool]) -> int:
    """The longest length up to `length` for which `fits(length)`, by bisection (`fits` holding for every length
    below one that fits); 0 when none does (not asked)."""
    low, high = 0, length  # the longest fitting length lies in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
