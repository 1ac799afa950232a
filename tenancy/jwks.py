"""`JwksKeySource`: the identity provider's signing keys from a JWKS URL, cached by `kid` and rate-limited.

Rules (docs/DESIGN.md § "Isolation by construction"):
- Keys are fetched with a timeout and a size limit and cached for `cache_seconds`; older keys are never used.
- A token whose `kid` is not in a fresh cache triggers a refetch (key rotation at the identity provider) — but a
  fetch, for whatever reason, happens at most once per `min_refresh_seconds`. Otherwise the token is rejected
  without a fetch, so a flood of made-up `kid`s cannot hammer the identity provider.
- A failed fetch (network, HTTP status, malformed JSON, too big, too slow) rejects the token with
  `AuthenticationFailed(reason="jwks_unavailable")`; it never raises anything else.
- `keys_for(kid, may_fetch=False)` never does I/O: when a fetch is needed it raises `FetchRequired`, so async
  callers can retry with `may_fetch=True` in a worker thread instead of blocking the event loop.

The clock (monotonic seconds) is injectable so tests can expire the cache without sleeping.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import jwt

from tenancy.errors import AuthenticationFailed
from tenancy.public_keys import ASYMMETRIC_ALGORITHMS, PublicKey, is_acceptable_public_key

logger = logging.getLogger(__name__)

MAX_JWKS_BYTES = 1_048_576
MAX_JWKS_KEYS = 100
MAX_KID_LENGTH = 256


class FetchRequired(Exception):
    """Internal signal of `keys_for(..., may_fetch=False)`: the answer needs a JWKS fetch (blocking I/O)."""


@dataclass(frozen=True, slots=True)
class JwksKey:
    """One usable signature key of the JWK Set. `algorithm` is the JWK's declared `alg` (None when absent)."""

    kid: str
    algorithm: str | None
    key: PublicKey


@dataclass(frozen=True, slots=True)
class _Snapshot:
    keys: Mapping[str, tuple[JwksKey, ...]]
    fetched_at: float


class JwksKeySource:
    """Thread-safe cache of a JWKS URL's keys. See the module docstring for the refresh rules."""

    def __init__(
        self,
        url: str,
        *,
        cache_seconds: float = 300,
        min_refresh_seconds: float = 30,
        timeout_seconds: float = 5,
        max_bytes: int = MAX_JWKS_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_jwks_url(url)
        self._url = url
        self._cache_seconds = cache_seconds
        self._min_refresh_seconds = min_refresh_seconds
        self._timeout_seconds = timeout_seconds
        self._max_bytes = max_bytes
        self._clock = clock
        self._lock = threading.Lock()
        # Replaced as a whole (never mutated), so the lock-free fast path always sees a consistent snapshot.
        self._snapshot: _Snapshot | None = None
        self._last_attempt: float | None = None
        self._fetching = False

    @property
    def url(self) -> str:
        return self._url

    def keys_for(self, kid: str, *, may_fetch: bool) -> tuple[JwksKey, ...]:
        """The cached keys with this `kid`, refetching the JWKS when allowed; raises `AuthenticationFailed`.

        With `may_fetch=False` this never blocks: it raises `FetchRequired` when a fetch is due or in progress.
        """
        found = self._lookup(self._snapshot, kid, self._clock())
        if found:
            return found
        if not may_fetch:
            if self._fetching or self._refresh_allowed(self._clock()):
                raise FetchRequired
            raise self._rejection(self._snapshot, self._clock())
        with self._lock:
            now = self._clock()
            found = self._lookup(self._snapshot, kid, now)
            if found:
                return found  # another thread fetched while we waited for the lock
            if not self._refresh_allowed(now):
                raise self._rejection(self._snapshot, now)
            self._last_attempt = now
            self._fetching = True
            try:
                snapshot = self._refresh(now)
            finally:
                self._fetching = False
        if kid not in snapshot.keys:
            raise _unknown_kid()
        return snapshot.keys[kid]

    def _fresh(self, snapshot: _Snapshot | None, now: float) -> bool:
        return snapshot is not None and now - snapshot.fetched_at < self._cache_seconds

    def _lookup(self, snapshot: _Snapshot | None, kid: str, now: float) -> tuple[JwksKey, ...]:
        if snapshot is None or not self._fresh(snapshot, now):
            return ()
        return snapshot.keys.get(kid, ())

    def _refresh_allowed(self, now: float) -> bool:
        return self._last_attempt is None or now - self._last_attempt >= self._min_refresh_seconds

    def _rejection(self, snapshot: _Snapshot | None, now: float) -> AuthenticationFailed:
        if self._fresh(snapshot, now):
            return _unknown_kid()
        return AuthenticationFailed(
            "the identity provider's signing keys are not available (JWKS fetch failed recently)",
            reason="jwks_unavailable",
        )

    def _refresh(self, now: float) -> _Snapshot:
        try:
            keys = parse_jwks(self._download())
        except (OSError, ValueError, http.client.HTTPException, jwt.PyJWTError) as exc:
            logger.warning("JWKS fetch from %s failed: %s: %s", self._url, type(exc).__name__, exc)
            raise AuthenticationFailed(
                "the identity provider's signing keys could not be fetched", reason="jwks_unavailable"
            ) from None
        snapshot = _Snapshot(keys=keys, fetched_at=now)
        self._snapshot = snapshot
        logger.info("JWKS fetched from %s: %d usable key id(s)", self._url, len(keys))
        return snapshot

    def _download(self) -> bytes:
        """GET the JWKS: `timeout_seconds` per socket operation and about that in total, at most `max_bytes`."""
        deadline = time.monotonic() + self._timeout_seconds
        request = urllib.request.Request(
            self._url, headers={"Accept": "application/jwk-set+json, application/json", "User-Agent": "hindsight"}
        )
        chunks: list[bytes] = []
        size = 0
        with urllib.request.urlopen(request, timeout=self._timeout_seconds) as response:
            while chunk := response.read(65536):
                size += len(chunk)
                if size > self._max_bytes:
                    raise ValueError(f"JWKS response is larger than {self._max_bytes} bytes")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"JWKS download took longer than {self._timeout_seconds} s")
                chunks.append(chunk)
        return b"".join(chunks)


def _unknown_kid() -> AuthenticationFailed:
    return AuthenticationFailed("the token's key id is not in the identity provider's JWKS", reason="unknown_kid")


def check_jwks_url(url: str) -> None:
    """Only http(s) URLs with a host (never `file:` and friends); plain http is logged as a warning off loopback."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("https", "http") or not parsed.hostname:
        raise ValueError(f"the JWKS URL must be an https:// URL with a host, got {url!r}")
    if parsed.scheme == "http" and parsed.hostname not in ("127.0.0.1", "localhost", "::1"):
        logger.warning("the JWKS URL %s is plain http: signing keys can be forged in transit; use https", url)


def parse_jwks(body: bytes) -> dict[str, tuple[JwksKey, ...]]:
    """The usable signature keys of a JWK Set document, by `kid`; raises `ValueError` if it is not a JWK Set.

    Keys without a `kid`, with `use` other than `sig`, with an `alg` we do not allow, symmetric (`oct`) or
    private keys, RSA keys under 2048 bits and unsupported curves are skipped. An empty set is valid.
    """
    document = json.loads(body)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError('the JWKS document is not a JSON object with a "keys" list')
    keys: dict[str, list[JwksKey]] = {}
    for entry in document["keys"][:MAX_JWKS_KEYS]:
        parsed = _parse_jwk(entry)
        if parsed is not None:
            keys.setdefault(parsed.kid, []).append(parsed)
    return {kid: tuple(found) for kid, found in keys.items()}


def _parse_jwk(entry: object) -> JwksKey | None:
    if not isinstance(entry, dict):
        return None
    kid = entry.get("kid")
    alg = entry.get("alg")
    if not isinstance(kid, str) or not kid or len(kid) > MAX_KID_LENGTH:
        return None
    if entry.get("use", "sig") != "sig" or entry.get("kty") not in ("RSA", "EC"):
        return None
    if alg is not None and alg not in ASYMMETRIC_ALGORITHMS:
        return None
    try:
        key = jwt.PyJWK(entry).key
    except (jwt.PyJWTError, ValueError, TypeError, KeyError, AttributeError):
        logger.info("JWKS key %r skipped: it cannot be parsed", kid)
        return None
    if not is_acceptable_public_key(key):
        return None  # private keys, short RSA keys, other curves
    return JwksKey(kid=kid, algorithm=alg, key=key)
