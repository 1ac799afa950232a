"""A real OpenAI-compatible chat server for tests, standing in for the external LLM: `POST /v1/chat/completions`
over HTTP on a free loopback port, served from a thread. No mocks: the engine's HTTP client talks to it as to any
LLM server.

`reply` decides each answer from the request: a string is the assistant's message, an int an HTTP error status.
Every request is kept in `requests`. After `stall()` requests are received but never answered until the server
stops (an LLM that hangs)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.http_stub import QuietHandler


@dataclass(frozen=True)
class ChatRequest:
    path: str
    authorization: str | None
    body: dict[str, Any]

    @property
    def system(self) -> str:
        return str(self.body["messages"][0]["content"])

    @property
    def prompt(self) -> str:
        """The last message: what the model is asked."""
        return str(self.body["messages"][-1]["content"])


Reply = Callable[[ChatRequest], str | int]


class ChatServer:
    def __init__(self, reply: Reply = lambda request: "ok") -> None:
        self.reply = reply
        self.requests: list[ChatRequest] = []
        self._stalled = False
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # a short poll interval: `stop` returns within it (serve_forever only notices shutdown between polls)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stall(self) -> None:
        """From now on, hold every request without an answer until the server stops."""
        self._stalled = True

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()  # releases stalled requests
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> ChatServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = ChatRequest(self.path, self.headers.get("Authorization"), body)
                server.requests.append(request)
                if server._stalled:
                    server._stopping.wait()
                    return
                answer = server.reply(request)
                if isinstance(answer, int):
                    status, payload = answer, {"error": {"message": f"HTTP {answer}"}}
                else:
                    message = {"role": "assistant", "content": answer}
                    status, payload = 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
                data = json.dumps(payload).encode()
                with contextlib.suppress(OSError):  # the client may have given up (its deadline passed)
                    self.answer(status, "application/json", data)

        return Handler
