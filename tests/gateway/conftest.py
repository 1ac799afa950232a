"""Fixtures of the gateway tests beyond the suite-wide ones (`tests/conftest.py`): the limiter backends the rate
limit and fairness tests run against in turn."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(params=["in_process", "redis", "redis_cluster"])
def limiter_backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Settings overrides naming each limiter backend in turn: in process, a real Redis, a real Redis Cluster."""
    if request.param == "redis":
        return {"redis_url": request.getfixturevalue("redis_url")}
    if request.param == "redis_cluster":
        return {"redis_url": request.getfixturevalue("redis_cluster_url"), "redis_cluster": True}
    return {}
