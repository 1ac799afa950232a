"""Connections cannot be hoarded (issue #32.5): `hindsight serve` in a subprocess (real uvicorn, its httptools
protocol guarded by gateway/web/connections.py), driven over raw sockets from several loopback source addresses
(127.0.0.x are all this host, each a client address of its own).

A request's head and body each have a deadline (408, then closed), a head has a size limit (431), a client address
a cap on open connections (503 `overloaded` at once), and the server a total: at it a new connection closes the one
waiting longest for a request, and with every connection busy a small reserve still answers the probes (503
`overloaded` to the rest)."""

from __future__ import annotations

import json
import logging
import os
import resource
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from gateway.web.connections import TrustedProxies, fit_open_files
from tenancy import mint_token
from tests.gateway.cli_runs import free_port, serving

SECRET = "connection-limits-secret-0123456789abcdef"
DEADLINE = 1.0  # header and body deadline of the first server, in seconds
PER_CLIENT = 3
HEAD_LIMIT = 4096


@contextmanager
def serve(tmp_path: Path, **settings: object) -> Iterator[int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_DATA_DIR": str(tmp_path / "data"), "HINDSIGHT_PORT": str(port), "HINDSIGHT_JWT_SECRET": SECRET}
    env |= {"HINDSIGHT_LOG_LEVEL": "warning", "HINDSIGHT_RATE_LIMIT_ENABLED": "false"}
    env |= {f"HINDSIGHT_{name.upper()}": str(value) for name, value in settings.items()}
    with (tmp_path / "server.log").open("w") as log, serving(env=env, cwd=tmp_path, log=log):
        yield port


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with serve(
        tmp_path_factory.mktemp("deadlines"),
        request_header_timeout_seconds=DEADLINE,
        request_body_timeout_seconds=DEADLINE,
        max_connections_per_client=PER_CLIENT,
        max_request_header_bytes=HEAD_LIMIT,
    ) as port:
        yield port


def connect(port: int, source: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 answer (status, headers, body by its Content-Length); bounded by the socket's timeout."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed without an answer after {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        chunk = sock.recv(65536)
        assert chunk, "closed in the middle of an answer"
        body += chunk
    return int(status_line.split()[1]), headers, body


def assert_closed(sock: socket.socket) -> None:
    assert sock.recv(1) == b"", "the server kept the connection open"


def error_of(body: bytes) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(body)["error"]
    return error


def test_a_connection_that_sends_nothing_gets_408_at_the_header_deadline_and_is_closed(port: int) -> None:
    with connect(port, "127.0.0.10") as sock:
        opened = time.monotonic()
        status, headers, body = read_answer(sock)
        waited = time.monotonic() - opened
        assert_closed(sock)
    assert status == 408
    assert headers["connection"] == "close"
    assert error_of(body)["data"]["code"] == "request_timeout"
    assert error_of(body)["code"] == -32012
    assert DEADLINE * 0.9 <= waited < DEADLINE + 4


def test_headers_trickled_in_get_no_more_time_than_the_deadline_from_the_connection_opening(port: int) -> None:
    with connect(port, "127.0.0.11") as sock:
        opened = time.monotonic()
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: gateway\r\n")
        sock.sendall(b"Content-Type: application/json\r\n")  # ... and never the blank line
        status, _, body = read_answer(sock)
        waited = time.monotonic() - opened
        assert_closed(sock)
    assert status == 408
    assert "headers did not arrive within 1 s" in error_of(body)["data"]["message"]
    assert DEADLINE * 0.9 <= waited < DEADLINE + 4


def test_a_later_request_on_a_kept_alive_connection_has_a_header_deadline_of_its_own(port: int) -> None:
    with connect(port, "127.0.0.12") as sock:
        sock.sendall(b"GET /livez HTTP/1.1\r\nHost: gateway\r\n\r\n")
        assert read_answer(sock)[0] == 200
        began = time.monotonic()
        sock.sendall(b"GET /livez HTTP/1.1\r\n")  # a first byte stops the keep-alive timer; the deadline holds
        status, _, _ = read_answer(sock)
        waited = time.monotonic() - began
        assert_closed(sock)
    assert status == 408
    assert DEADLINE * 0.9 <= waited < DEADLINE + 4


def test_a_body_slower_than_its_deadline_gets_408_and_the_connection_is_closed(port: int) -> None:
    token = mint_token(SECRET, tenant="acme", subject="slow", read=["user:1"], write=["user:1"])
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\nContent-Length: 100\r\n\r\n"
    )
    with connect(port, "127.0.0.13") as sock:
        sock.sendall(head.encode() + b'{"jsonrpc": "2.0",')  # the gate is reading the body: 82 bytes to go
        began = time.monotonic()
        status, _, body = read_answer(sock)
        waited = time.monotonic() - began
        assert_closed(sock)
    assert status == 408
    assert "body did not arrive within 1 s" in error_of(body)["data"]["message"]
    assert DEADLINE * 0.9 <= waited < DEADLINE + 4


def test_a_request_head_over_the_limit_gets_431_and_the_connection_is_closed(port: int) -> None:
    with connect(port, "127.0.0.14") as sock:
        sock.sendall(b"GET /livez HTTP/1.1\r\nHost: gateway\r\nX-Padding: " + b"p" * HEAD_LIMIT + b"\r\n")
        status, _, body = read_answer(sock)
        assert_closed(sock)
    assert status == 431
    assert error_of(body)["data"]["code"] == "headers_too_large"


def test_connections_over_the_per_client_cap_get_503_at_once_while_other_addresses_are_served(port: int) -> None:
    held = [connect(port, "127.0.0.20") for _ in range(PER_CLIENT)]
    try:
        with connect(port, "127.0.0.20") as extra:
            status, headers, body = read_answer(extra)  # before any deadline: nothing was sent
            assert_closed(extra)
        transport = httpx2.HTTPTransport(local_address="127.0.0.21")
        with httpx2.Client(transport=transport) as other:
            live = other.get(f"http://127.0.0.1:{port}/livez", timeout=10)
    finally:
        for sock in held:
            sock.close()
    assert status == 503
    assert headers["retry-after"] == "1"
    assert error_of(body)["data"] == {
        "code": "overloaded",
        "message": "too many open connections from this address; close some, or retry shortly",
        "retryable": True,
        "retry_after_seconds": 1,
    }
    assert live.status_code == 200


def slow_call(port: int, source: str) -> socket.socket:
    """A connection busy with a request: its head complete (the server asked for the body: 100 Continue), its body
    still to come."""
    token = mint_token(SECRET, tenant="acme", subject="busy", read=["user:1"], write=["user:1"])
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
        f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\nContent-Length: 100\r\n\r\n"
    )
    sock = connect(port, source)
    sock.sendall(head.encode())
    assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue")
    return sock


def test_at_the_total_cap_a_new_connection_closes_the_one_waiting_longest_for_a_request(tmp_path: Path) -> None:
    with serve(tmp_path, max_connections=4, probe_connection_reserve=2, request_header_timeout_seconds=30) as port:
        held = [connect(port, f"127.0.0.{30 + i}") for i in range(4)]  # the whole of max_connections, idle
        try:
            with connect(port, "127.0.0.40") as newcomer:
                newcomer.sendall(b"GET /livez HTTP/1.1\r\nHost: gateway\r\n\r\n")
                status, headers, _ = read_answer(newcomer)
            assert (status, headers.get("connection")) == (200, None)  # served as any connection (kept alive)
            status, _, body = read_answer(held[0])  # the oldest idle one made way
            assert_closed(held[0])
            assert status == 503
            assert error_of(body)["data"]["message"] == "the server has too many open connections; retry shortly"
        finally:
            for sock in held:
                sock.close()


def test_with_every_connection_busy_a_reserve_still_answers_the_probes_and_nothing_else(tmp_path: Path) -> None:
    with serve(tmp_path, max_connections=2, probe_connection_reserve=2) as port:
        busy = [slow_call(port, "127.0.0.50"), slow_call(port, "127.0.0.51")]
        try:
            with connect(port, "127.0.0.52") as probe:
                probe.sendall(b"GET /readyz HTTP/1.1\r\nHost: gateway\r\n\r\n")
                status, headers, _ = read_answer(probe)
                assert (status, headers["connection"]) == (200, "close")  # a reserved connection serves one answer
                assert_closed(probe)
            with connect(port, "127.0.0.53") as call:
                call.sendall(b"POST /mcp HTTP/1.1\r\nHost: gateway\r\nContent-Length: 2\r\n\r\n{}")
                status, _, body = read_answer(call)
                assert_closed(call)
            assert status == 503
            assert error_of(body)["data"]["code"] == "overloaded"
        finally:
            for sock in busy:
                sock.close()


def test_trusted_proxies_are_addresses_networks_or_any() -> None:
    trusted = TrustedProxies(["127.0.0.1", "10.42.0.0/16", "::1"])
    assert all(host in trusted for host in ("127.0.0.1", "10.42.3.4", "::1"))
    assert not any(host in trusted for host in ("127.0.0.2", "10.43.0.1", "", "not-an-address"))
    assert "203.0.113.9" in TrustedProxies(["*"])


def test_the_connection_cap_is_lowered_to_fit_the_open_file_limit(caplog: pytest.LogCaptureFixture) -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft < 64:
        pytest.skip(f"an open-file limit of {soft} leaves nothing to fit")
    caplog.set_level(logging.WARNING, logger="hindsight.connections")
    assert fit_open_files(soft // 4, 8) == (soft // 4, 8)  # fits: unchanged, nothing said
    assert not caplog.records
    total, reserve = fit_open_files(soft * 2, 8)
    assert 1 <= reserve <= 8
    assert total + reserve <= soft * 3 // 4
    assert "does not fit the open-file limit" in caplog.text
