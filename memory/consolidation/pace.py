"""The pace of scheduled consolidation: each namespace at most once per interval (weekly by default,
`HINDSIGHT_CONSOLIDATION_INTERVAL_DAYS`), so the semantic layer does not churn between two maintenance passes.

The record lives in the process that schedules maintenance: after a restart each namespace is due once, which costs
only the clustering, since an unchanged cluster does not rewrite its semantic memory. The `consolidate` tool and
`hindsight maintain` consolidate at once, whatever the pace.
"""

from __future__ import annotations

from datetime import datetime, timedelta


class ConsolidationPace:
    def __init__(self, interval: timedelta) -> None:
        self.interval = interval
        self._last: dict[tuple[str, str], datetime] = {}

    def due(self, tenant: str, namespace: str, now: datetime) -> bool:
        """Whether the namespace's last consolidation was at least `interval` ago (or never, in this process)."""
        last = self._last.get((tenant, namespace))
        return last is None or now - last >= self.interval

    def ran(self, tenant: str, namespace: str, now: datetime) -> None:
        self._last[(tenant, namespace)] = now
