"""Audit events: one structured record per mutating tool call, on the `hindsight.audit` logger.

An event says who did what where and how it ended (time, tenant, subject, tool, namespace, ids, request_id,
outcome); it never carries memory content, state values or the token.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

audit_logger = logging.getLogger("hindsight.audit")


def audit_event(
    *,
    tool: str,
    tenant: str | None,
    subject: str | None,
    outcome: str,
    arguments: dict[str, Any],
    body: dict[str, Any] | None,
) -> dict[str, Any]:
    """Build the event for one call from its arguments and result (content-free fields only)."""
    ids: list[str] = []
    namespace = arguments.get("namespace")
    if body is not None:
        if isinstance(body.get("id"), str):
            ids.append(body["id"])
        ids += [i for i in body.get("extracted", []) if isinstance(i, str)]
        ids += [r["id"] for r in body.get("results", []) if isinstance(r, dict) and isinstance(r.get("id"), str)]
        namespace = body.get("namespace", namespace)
    elif isinstance(arguments.get("id"), str):
        ids.append(arguments["id"])
    event = {
        "time": datetime.now(UTC).isoformat(),
        "tenant": tenant,
        "subject": subject,
        "tool": tool,
        "namespace": namespace if isinstance(namespace, str) else None,
        "ids": ids,
        "request_id": arguments.get("request_id") if isinstance(arguments.get("request_id"), str) else None,
        "outcome": outcome,
    }
    if body is not None and isinstance(body.get("receipt"), dict):
        event["receipt"] = body["receipt"]  # an erasure's counts per store, time and admin: no content
    return event


def emit(event: dict[str, Any]) -> None:
    audit_logger.info(json.dumps(event, ensure_ascii=False), extra={"audit": event})
