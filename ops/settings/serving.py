"""`ServingSettings`: the HTTP server: where it listens, the hosts and proxies it believes, and how long and how
large a request and how many connections it takes."""

from __future__ import annotations

from pydantic import Field

from ops.settings.base import SettingsGroup

PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"  # RFC 9728 §3


class ServingSettings(SettingsGroup):
    """The HTTP server (`HINDSIGHT_HOST`, `HINDSIGHT_PORT`, `HINDSIGHT_MAX_CONNECTIONS`, ...)."""

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=1, le=65535)
    public_url: str | None = Field(None, description="External base URL, used in client snippets and auth metadata.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host headers accepted on /mcp (DNS-rebinding protection). Empty: localhost only when bound "
        "to a loopback address, any host otherwise.",
    )
    forwarded_allow_ips: list[str] = Field(
        default_factory=lambda: ["127.0.0.1", "::1"],
        description='Proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses, CIDRs, or "*"): '
        "behind them the client address (refusal limits) is the forwarded one, and they are exempt from the "
        "per-client connection cap.",
    )
    request_header_timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=300,
        description="A connection must send a request's whole headers within this long (from its opening, or from "
        "the first byte of a later request): else 408 and closed.",
    )
    request_body_timeout_seconds: float = Field(
        30.0, gt=0, le=3600, description="A request body must arrive whole within this long after its headers."
    )
    max_request_header_bytes: int = Field(
        32_768, ge=4096, le=1_048_576, description="Largest request head (request line and headers): 431 above."
    )
    max_connections: int = Field(
        1000,
        ge=1,
        description="Open connections served at once (lowered to fit the open-file limit); beyond them a small "
        "reserve answers only /livez and /readyz (503 to the rest), and further connections are closed at once.",
    )
    max_connections_per_client: int = Field(
        100,
        ge=1,
        description="Open connections per client address (peer address; trusted proxies are exempt): more are "
        "answered 503 and closed at once.",
    )
    probe_connection_reserve: int = Field(
        8, ge=1, le=1000, description="Connections kept beyond max_connections for /livez and /readyz only."
    )
    jemalloc: bool = Field(
        True,
        description="`hindsight serve` preloads jemalloc (Debian's libjemalloc2, in the image) when the machine has "
        "it: the embedded engine's CPU per recall drops by about a quarter (ops/allocator.py). false: the system "
        "allocator.",
    )

    @property
    def base_url(self) -> str:
        """The external base URL: `public_url`, else this server's own address."""
        return (self.public_url or f"http://{_url_host(self.host)}:{self.port}").rstrip("/")

    @property
    def mcp_url(self) -> str:
        return self.base_url + "/mcp"

    @property
    def resource_metadata_url(self) -> str:
        """Where the RFC 9728 protected-resource metadata of `/mcp` is served (named in `WWW-Authenticate`)."""
        return self.base_url + PROTECTED_RESOURCE_PATH + "/mcp"


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host
