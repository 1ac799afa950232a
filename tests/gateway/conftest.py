"""Fixtures of the gateway tests beyond the suite-wide ones (`tests/conftest.py`): the limiter backends the rate
limit and fairness tests run against in turn."""

from __future__ import annotations

from typing import Any

import pytest

PATIENT = {"redis_fail_open_timeout_seconds": 5.0}  # = backend_timeout_seconds


@pytest.fixture(params=["in_process", "redis", "redis_cluster"])
def limiter_backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Settings overrides naming each limiter backend in turn: in process, a real Redis, a real Redis Cluster. The
    Redis is healthy here: a call whose failure is served anyway may wait as long as any other (a busy machine can
    keep a cluster from answering within the default 0.5 s, and the limiter would then fail open)."""
    if request.param == "redis":
        return {"redis_url": request.getfixturevalue("redis_url"), **PATIENT}
    if request.param == "redis_cluster":
        return {"redis_url": request.getfixturevalue("redis_cluster_url"), "redis_cluster": True, **PATIENT}
    return {}
