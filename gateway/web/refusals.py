"""`RefusalLimiter`: refused requests are not free to send. Per client address, and per bearer token, a small
token bucket counts the requests the app refused (400 malformed, 401 no or bad token, 413 body too large); once
one of them is empty, that client's or token's requests get 429 with `Retry-After` straight away, before any
token is verified, span opened or body read.

- The client address is `scope["client"]`: the peer, or, behind a proxy listed in `HINDSIGHT_FORWARDED_ALLOW_IPS`,
  the address it forwards (uvicorn's proxy-headers middleware, outside the app, has put it there).
- The token's fingerprint is a BLAKE2b hash of the `Authorization` header (up to `jwt_max_token_bytes` plus the
  scheme; a longer header is refused by the verifier unparsed, and hashed no further), so the same bad token from
  many addresses is limited too, and a valid token sending bodies over the limit is limited by its own bucket.
- A token that authenticated is remembered (its fingerprint, no more): it passes its address's empty bucket, so
  the clients of an address shared with a bad one (a NAT, a proxy whose forwarding is not configured) that
  already got through keep working. Its own bucket still applies, and a refusal forgets it.
- The probes (`/livez`, `/readyz`) are never limited. A 429 of a request whose body was not read closes the
  connection (`Connection: close`), so its body is never read either.

Buckets live in this process (each replica limits on its own: enough to stop a flood reaching one replica).
Each table keeps at most `MAX_KEYS` keys; the least recently charged one is forgotten first (a missing bucket is
a full one). Every 429 is a `gateway.errors.rejection` and counts through `on_limited`.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import rejection
from ops.config import Settings

REFUSED_STATUSES = frozenset({400, 401, 413})
UNLIMITED_PATHS = frozenset({"/livez", "/readyz"})
MAX_KEYS = 65_536
LIMITED = "too many refused requests (invalid tokens, bodies over the limit, malformed requests) from this client"


class RefusalBuckets:
    """Token buckets of `capacity` refusals refilled at `per_second`, one per key, in a bounded table."""

    def __init__(self, per_second: float, capacity: float, clock: Callable[[], float], max_keys: int = MAX_KEYS):
        self.per_second = per_second
        self.capacity = capacity
        self.clock = clock
        self.max_keys = max_keys
        self._levels: OrderedDict[bytes | str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)

    def _tokens(self, key: bytes | str, now: float) -> float:
        level = self._levels.get(key)
        if level is None:
            return self.capacity
        tokens, at = level
        return min(self.capacity, tokens + max(0.0, now - at) * self.per_second)

    def wait(self, key: bytes | str) -> float:
        """Seconds until `key`'s bucket holds a token again; 0 when it holds one now."""
        tokens = self._tokens(key, self.clock())
        return 0.0 if tokens >= 1 else (1 - tokens) / self.per_second

    def charge(self, key: bytes | str) -> None:
        now = self.clock()
        self._levels[key] = (max(0.0, self._tokens(key, now) - 1), now)
        self._levels.move_to_end(key)
        if len(self._levels) > self.max_keys:
            self._levels.popitem(last=False)


class KnownTokens:
    """Fingerprints of tokens that authenticated, most recent last, at most `max_keys`."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    def __contains__(self, fingerprint: bytes) -> bool:
        return fingerprint in self._seen

    def add(self, fingerprint: bytes) -> None:
        self._seen[fingerprint] = None
        self._seen.move_to_end(fingerprint)
        if len(self._seen) > self.max_keys:
            self._seen.popitem(last=False)

    def discard(self, fingerprint: bytes) -> None:
        self._seen.pop(fingerprint, None)


class RefusalLimiter:
    """See the module docstring. Off (a plain pass-through) when `refusal_limit_per_minute` is 0."""

    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        on_limited: Callable[[], None] | None = None,
    ) -> None:
        self.app = app
        per_second = settings.rate_limits.refusal_limit_per_minute / 60.0
        capacity = float(settings.rate_limits.refusal_limit_burst)
        self.addresses = RefusalBuckets(per_second, capacity, clock) if per_second > 0 else None
        self.tokens = RefusalBuckets(per_second, capacity, clock)
        self.known = KnownTokens()
        self.fingerprint_bytes = settings.auth.jwt_max_token_bytes + len("Bearer ")
        self.on_limited = on_limited

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.addresses is None or scope["type"] != "http" or scope.get("path") in UNLIMITED_PATHS:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = client[0] if client else ""
        authorization, has_body = b"", False
        for name, value in scope.get("headers") or ():
            if name == b"authorization":
                authorization = value
            elif (name == b"content-length" and value.strip() not in (b"", b"0")) or name == b"transfer-encoding":
                has_body = True
        fingerprint = (
            hashlib.blake2b(authorization[: self.fingerprint_bytes], digest_size=16).digest() if authorization else None
        )
        wait = 0.0 if fingerprint is not None and fingerprint in self.known else self.addresses.wait(address)
        if fingerprint is not None:
            wait = max(wait, self.tokens.wait(fingerprint))
        if wait > 0:
            if self.on_limited is not None:
                self.on_limited()
            refusal = rejection(
                "rate_limited",
                f"{LIMITED} or with this token; slow down",
                retry_after_seconds=wait,
                headers={"Connection": "close"} if has_body else None,
            )
            await refusal(scope, receive, send)
            return
        status = 0

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start" and not status:
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            self._count(scope, address, fingerprint, status)

    def _count(self, scope: Scope, address: str, fingerprint: bytes | None, status: int) -> None:
        assert self.addresses is not None
        if status in REFUSED_STATUSES:
            self.addresses.charge(address)
            if fingerprint is not None:
                self.tokens.charge(fingerprint)
                self.known.discard(fingerprint)
        elif fingerprint is not None and isinstance(scope.get("user"), AuthenticatedUser):
            self.known.add(fingerprint)
