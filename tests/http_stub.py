"""The request handler that the suite's stand-in HTTP servers (the LLM, a JWKS endpoint, an OTLP collector) derive
theirs from: one call sends a whole answer, and no access line is logged into the test output."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


class QuietHandler(BaseHTTPRequestHandler):
    def answer(self, status: int, content_type: str, body: bytes) -> None:
        """Send a complete response: the status, the body's type and length, then the body."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # a stand-in server's access lines would only clutter the test output
