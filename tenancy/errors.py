"""The tenancy error hierarchy: failed authentication and missing OAuth scopes.

`gateway/` maps `AuthenticationFailed` to HTTP 401 and `ScopeForbidden` to HTTP 403 (`insufficient_scope`).
Messages are safe to return to the caller: they never contain the bearer token or any part of it.
"""

from __future__ import annotations

from typing import ClassVar


class TenancyError(Exception):
    """Base of every error `tenancy/` raises on purpose."""

    code: ClassVar[str] = "tenancy_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AuthenticationFailed(TenancyError):
    """The bearer token is missing, malformed, expired, badly signed or carries invalid claims.

    `reason` is a short machine-readable tag (`expired`, `bad_signature`, `wrong_audience`, ...) for logs and
    metrics; `message` is the human-readable explanation.
    """

    code: ClassVar[str] = "unauthenticated"

    def __init__(self, message: str, *, reason: str = "invalid_token") -> None:
        super().__init__(message)
        self.reason = reason


class ScopeForbidden(TenancyError):
    """The token is valid but lacks the OAuth scope the operation needs (e.g. `memory:write`)."""

    code: ClassVar[str] = "scope_forbidden"

    def __init__(self, message: str, *, required_scope: str | None = None) -> None:
        super().__init__(message)
        self.required_scope = required_scope


class IdempotencyConflict(TenancyError):
    """A `request_id` was reused with other arguments: the first call's result stands, this one is refused."""

    code: ClassVar[str] = "idempotency_conflict"


class TooManyCalls(TenancyError):
    """A subject or tenant already has as many tool calls running as it may (`tenancy.concurrency`), and no turn
    came free within the wait: retry shortly."""

    code: ClassVar[str] = "rate_limited"


class CpuBudgetSpent(TenancyError):
    """A subject's or tenant's CPU budget is in debt (`gateway.web.fairness`): retry once it has refilled."""

    code: ClassVar[str] = "rate_limited"
