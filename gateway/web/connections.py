"""Connection limits below the app: a subclass of uvicorn's httptools protocol that `hindsight serve` gives uvicorn
as its `http` class (`guarded_protocol`). An ASGI middleware cannot do this: the app is only called once a
request's headers are complete, and uvicorn's own timeouts start only after a first answer (`timeout_keep_alive`
is the idle time between requests).

- Deadlines: a request's head (request line and headers) must arrive within `request_header_timeout_seconds`,
  counted from the connection's opening, or from the first byte of a later request on a kept-alive connection;
  its body within `request_body_timeout_seconds` of the head's end. Past either: 408 and the connection is closed
  (only closed when another answer is under way on it).
- A head over `max_request_header_bytes` (about: counted per read): 431 and closed (httptools has no such limit).
- Caps: at most `max_connections_per_client` open connections per peer address (proxies listed in
  `forwarded_allow_ips` are exempt: they carry everyone's): one more is answered 503 `overloaded` at once and
  closed, without reading it. At most `max_connections` in all: when they are open, a new connection first closes
  the connection that has waited longest for a request's head (one opened and silent, one trickling its headers,
  or a kept-alive one between requests), so hoarded idle connections give way to new ones; when all of them are
  busy with requests, a reserve of `probe_connection_reserve` more connections serves `/livez` and `/readyz` only
  (503 to anything else, then closed), and a connection beyond that gets 503 at once. A flood of connections
  neither silences the probes nor takes the process to its open-file limit (`max_connections` and the reserve are
  lowered, with a warning, to fit in three quarters of the soft `RLIMIT_NOFILE`).

Every answer here is a `gateway.errors.rejection` written straight to the socket. Refusals and deadline closes
are logged as one warning line per 10 s at most, with their counts.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
import time
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, ClassVar, Literal, cast

from uvicorn._types import ASGI3Application
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gateway.errors import rejection
from ops.config import Settings

logger = logging.getLogger("hindsight.connections")

PROBE_PATHS = frozenset({b"/livez", b"/readyz"})
REPORT_EVERY_SECONDS = 10.0
Admission = Literal["serve", "probes", "refuse"]


class TrustedProxies:
    """`forwarded_allow_ips` as uvicorn reads it: addresses, networks (CIDR), "*" for any; other names (a Unix
    socket's) literally."""

    def __init__(self, entries: Sequence[str]) -> None:
        self.any = "*" in entries
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        self.names: set[str] = set()
        for entry in entries:
            try:
                self.networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                self.names.add(entry.strip())

    def __contains__(self, host: str) -> bool:
        if self.any or host in self.names:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self.networks)


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_header_bytes: int
    max_connections: int
    max_per_client: int
    probe_reserve: int
    trusted: TrustedProxies

    @classmethod
    def from_settings(cls, settings: Settings) -> ConnectionLimits:
        total, reserve = fit_open_files(settings.serving.max_connections, settings.serving.probe_connection_reserve)
        return cls(
            header_timeout=settings.serving.request_header_timeout_seconds,
            body_timeout=settings.serving.request_body_timeout_seconds,
            max_header_bytes=settings.serving.max_request_header_bytes,
            max_connections=total,
            max_per_client=settings.serving.max_connections_per_client,
            probe_reserve=reserve,
            trusted=TrustedProxies(settings.serving.forwarded_allow_ips),
        )


def fit_open_files(max_connections: int, reserve: int) -> tuple[int, int]:
    """`max_connections` and the probe reserve, lowered to fit in three quarters of the soft open-file limit (the
    rest is for the stores, Redis and the logs)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or max_connections + reserve <= soft * 3 // 4:
        return max_connections, reserve
    room = max(2, soft * 3 // 4)
    fitted_reserve = min(reserve, max(1, room // 10))
    fitted = room - fitted_reserve
    logger.warning(
        "HINDSIGHT_MAX_CONNECTIONS=%d (+%d for probes) does not fit the open-file limit (ulimit -n %d): serving at "
        "most %d connections (+%d for probes); raise the limit to serve more",
        max_connections, reserve, soft, fitted, fitted_reserve,
    )  # fmt: skip
    return fitted, fitted_reserve


def raw_rejection(code: str, message: str) -> bytes:
    """The HTTP/1.1 bytes of `rejection(code, message)` with `Connection: close`."""
    response = rejection(code, message, headers={"Connection": "close"})
    status = HTTPStatus(response.status_code)
    head = [f"HTTP/1.1 {status.value} {status.phrase}\r\n".encode()]
    head += [name + b": " + value + b"\r\n" for name, value in response.raw_headers]
    return b"".join(head) + b"\r\n" + response.body


class ConnectionTable:
    """The open connections of one server, counted per peer address, and the answers its connections write."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.total = 0
        self.per_client: Counter[str] = Counter()
        # connections waiting for a request's head, the longest waiting first: the ones a new connection may close
        self.waiting: OrderedDict[GuardedHttpToolsProtocol, None] = OrderedDict()
        self.events: Counter[str] = Counter()
        self.reported_at = time.monotonic()
        self.too_many_from_client = raw_rejection(
            "overloaded", "too many open connections from this address; close some, or retry shortly"
        )
        self.too_many = raw_rejection("overloaded", "the server has too many open connections; retry shortly")
        self.probes_only = rejection(
            "overloaded",
            "the server has too many open connections; retry shortly",
            headers={"Connection": "close"},
        )
        self.head_timeout = raw_rejection(
            "request_timeout", f"the request's headers did not arrive within {limits.header_timeout:g} s"
        )
        self.body_timeout = raw_rejection(
            "request_timeout", f"the request's body did not arrive within {limits.body_timeout:g} s"
        )
        self.head_too_large = raw_rejection(
            "headers_too_large", f"the request's headers are over {limits.max_header_bytes} bytes"
        )

    def admit(self, host: str) -> tuple[Admission, bytes]:
        """Whether a new connection from `host` is served, served for probes only, or refused (with its answer);
        a connection admitted counts until `release`. At `max_connections`, the connection waiting longest for a
        request's head is closed first."""
        limits = self.limits
        if self.per_client[host] >= limits.max_per_client and host not in limits.trusted:
            return "refuse", self.too_many_from_client
        if self.total >= limits.max_connections and self.waiting:
            oldest, _ = self.waiting.popitem(last=False)
            oldest.give_way()
            self.note("waiting connections closed for new ones")
        if self.total >= limits.max_connections + limits.probe_reserve:
            return "refuse", self.too_many
        self.total += 1
        self.per_client[host] += 1
        return ("probes" if self.total > limits.max_connections else "serve"), b""

    def release(self, host: str) -> None:
        self.total -= 1
        self.per_client[host] -= 1
        if self.per_client[host] <= 0:
            del self.per_client[host]

    def note(self, event: str) -> None:
        """Count `event`; log the counts at most once per `REPORT_EVERY_SECONDS`."""
        self.events[event] += 1
        now = time.monotonic()
        if now - self.reported_at >= REPORT_EVERY_SECONDS:
            counts = ", ".join(f"{count} {name}" for name, count in sorted(self.events.items()))
            logger.warning("connection limits: %s in the last %.0f s", counts, now - self.reported_at)
            self.events.clear()
            self.reported_at = now


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the module docstring's deadlines and caps; `guarded_protocol` makes the
    subclass a server uses, with its own `table`."""

    table: ClassVar[ConnectionTable]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._host: str | None = None  # set while the connection counts in the table
        self._probes_only = False
        self._closing = False  # refused or closed by a deadline: nothing more is read
        self._in_head = True
        self._head_bytes = 0
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        host = self.client[0] if self.client else ""
        admission, answer = self.table.admit(host)
        if admission == "refuse":
            self.table.note("connections refused")
            self._close_with(answer)
            return
        self._host = host
        self._probes_only = admission == "probes"
        self.table.waiting[self] = None
        self._arm(self.table.limits.header_timeout, "head")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._release()
        super().connection_lost(exc)

    def give_way(self) -> None:
        """Closed for a new connection while waiting for a request's head: 503 unless it is a kept-alive one
        between requests (closed as its keep-alive timeout would)."""
        self._release()
        self._close_with(self.table.too_many if self.cycle is None or self._head_bytes else b"")

    def _release(self) -> None:
        if self._host is not None:
            self.table.release(self._host)
            self.table.waiting.pop(self, None)
            self._host = None

    def _wait_for_a_head(self) -> None:
        """Count as waiting (last) if the connection is between requests: its answers sent, no head begun."""
        waiting = self._in_head and (self.cycle is None or self.cycle.response_complete)
        if self._host is not None and waiting and not self.transport.is_closing():
            self.table.waiting[self] = None
            self.table.waiting.move_to_end(self)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self.table.limits.max_header_bytes:
            self.table.note("heads too large")
            self._close_with(self.table.head_too_large)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:  # a later request on a kept-alive connection
            self._arm(self.table.limits.header_timeout, "head")

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        self.table.waiting.pop(self, None)
        if self._probes_only and self.url.partition(b"?")[0] not in PROBE_PATHS:
            app, self.app = self.app, cast(ASGI3Application, self.table.probes_only)
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        else:
            super().on_headers_complete()
        if self._probes_only and self.cycle is not None:
            self.cycle.keep_alive = False  # a reserved connection serves one answer
        self._arm(self.table.limits.body_timeout, "body")

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()
        self._in_head = True
        self._wait_for_a_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._wait_for_a_head()

    def _arm(self, seconds: float, phase: Literal["head", "body"]) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired, phase)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, phase: Literal["head", "body"]) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        self.table.note("requests timed out")
        cycle = self.cycle
        # answer 408 unless an answer is under way (a head: the previous request's; a body: this request's)
        idle = cycle is None or (cycle.response_complete if phase == "head" else not cycle.response_started)
        self._close_with((self.table.head_timeout if phase == "head" else self.table.body_timeout) if idle else b"")

    def _close_with(self, answer: bytes) -> None:
        self._closing = True
        self._disarm()
        if not self.transport.is_closing():
            if answer:
                self.transport.write(answer)
            self.transport.close()


def guarded_protocol(settings: Settings) -> type[GuardedHttpToolsProtocol]:
    """The protocol class for one server (`uvicorn.run(..., http=guarded_protocol(settings))`), with its own
    connection table."""

    class ServerProtocol(GuardedHttpToolsProtocol):
        table = ConnectionTable(ConnectionLimits.from_settings(settings))

    return ServerProtocol
