"""What a benchmark run is given and what it gathers: the sizes and query counts of `make bench` and `make bench-quick`
(`Config`), the results of each phase (`Results`), and the tokens, scopes and settings the phases use."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread

from bench import corpus, profiling
from bench.mcp_load import (
    LoadResult,
)
from bench.previous import Previous, Quality
from bench.server import ServerProcess
from bench.server_cpu import RawFigures
from bench.stats import Samples
from memory.scope import NamespaceScope
from ops.config import Settings
from tenancy import SCOPE_ADMIN, SCOPE_READ, SCOPE_WRITE, Principal, mint_token, scope_for

SECRET = "bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz"
READER = "bench-reader"
WRITER = "bench-writer"
PATHS = ("mcp", "service", "store", "engine", "embed")


@dataclass
class Config:
    """A run's sizes, counts and places; the defaults are `make bench`'s."""

    out: Path
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    queries: int = 300
    warmup: int = 30
    fanout: tuple[int, ...] = (1, 10, 50)
    concurrency: tuple[int, ...] = (1, 8, 32)
    load_seconds: float = 10.0
    writes: int = 200
    concurrent_writes: int = 2_000
    write_workers: int = 16
    write_clients: int = 8
    batch: int = 1_000
    profile_seconds: float = 12.0
    quick: bool = False
    workdir: Path | None = None
    keep: bool = False
    render_only: bool = False
    stages: bool = True  # the sections measured after the report (`bench.run.STAGES`)
    server_env: dict[str, str] = field(default_factory=dict)  # `--env`: HINDSIGHT_* settings of every server
    compare_env: dict[str, str] = field(default_factory=dict)  # `--compare-env`: the raw-client phase again with these


def quick_config(out: Path) -> Config:
    """The same phases on small sizes with short runs (`make bench-quick`, the smoke test)."""
    return Config(
        out,
        sizes=(500, 2_000),
        queries=30,
        warmup=5,
        load_seconds=1.0,
        writes=20,
        concurrent_writes=100,
        batch=500,
        profile_seconds=1.5,
        quick=True,
    )


# -- results ---------------------------------------------------------------------------------------------------
@dataclass
class Ingest:
    memories: int = 0
    generate_s: float = 0.0
    embed_s: float = 0.0
    upsert_s: float = 0.0
    index_s: float = 0.0

    @property
    def load_s(self) -> float:
        return self.generate_s + self.embed_s + self.upsert_s


@dataclass
class SizeResult:
    size: int
    recall: dict[str, Samples] = field(default_factory=dict)  # path -> samples
    ingest: Ingest = field(default_factory=Ingest)
    writes_service: Samples = field(default_factory=Samples)
    writes_mcp: Samples = field(default_factory=Samples)
    disk: dict[str, int] = field(default_factory=dict)
    rss_ready: dict[str, int] = field(default_factory=dict)
    rss_loaded: dict[str, int] = field(default_factory=dict)
    server_start_s: float = 0.0


@dataclass
class Throughput:
    label: str
    count: int
    seconds: float
    note: str = ""

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0


@dataclass
class Results:
    config: Config
    machine: dict[str, str]
    sizes: list[SizeResult] = field(default_factory=list)
    fanout: dict[int, dict[str, Samples]] = field(default_factory=dict)  # granted namespaces -> path -> samples
    concurrency: list[LoadResult] = field(default_factory=list)
    throughput: list[Throughput] = field(default_factory=list)
    baseline_rss: dict[str, int] = field(default_factory=dict)
    baseline_disk: int = 0
    profiles: list[profiling.Profile] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    corpus_words: tuple[int, int, int] = (0, 0, 0)
    recall_mode: str = "dense"
    load_before: str = ""
    load_after: str = ""
    wall_s: float = 0.0
    previous: Previous | None = None  # the figures of the run whose RESULTS.md this one replaces
    quality: Quality | None = None  # the recall-quality figures `hindsight eval` keeps in RESULTS.md
    raw: list[RawFigures] = field(default_factory=list)  # server CPU per recall, raw client (`bench.server_cpu`)


# -- scopes and tokens -----------------------------------------------------------------------------------------
def reader_scope(namespaces: Sequence[str]) -> NamespaceScope:
    principal = Principal(
        subject=READER, tenant=corpus.TENANT, read_namespaces=tuple(namespaces), scopes=frozenset({SCOPE_READ})
    )
    return scope_for(principal)


def writer_scope() -> NamespaceScope:
    principal = Principal(
        subject=WRITER,
        tenant=corpus.TENANT,
        write_namespaces=(corpus.WRITE_NAMESPACE,),
        scopes=frozenset({SCOPE_READ, SCOPE_WRITE}),
    )
    return scope_for(principal)


def loader_scope() -> NamespaceScope:
    return scope_for(Principal(subject=corpus.SUBJECT, tenant=corpus.TENANT, scopes=frozenset({SCOPE_ADMIN})))


def reader_token(namespaces: Sequence[str]) -> str:
    return mint_token(
        SECRET, tenant=corpus.TENANT, subject=READER, read=list(namespaces), write=[], ttl_seconds=12 * 3600
    )


def writer_token() -> str:
    return mint_token(
        SECRET, tenant=corpus.TENANT, subject=WRITER, read=[], write=[corpus.WRITE_NAMESPACE], ttl_seconds=12 * 3600
    )


def settings_for(data_dir: Path) -> Settings:
    return Settings(
        _env_file=None,
        data_dir=data_dir,
        jwt_secret=SECRET,
        rate_limit_enabled=False,
        maintenance_interval_seconds=3600,  # the benchmark calls maintain() itself
        log_level="warning",
    )


# -- in process ------------------------------------------------------------------------------------------------


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


async def start_server(data_dir: Path, log: Path, env: Mapping[str, str] | None = None) -> ServerProcess:
    """`hindsight serve` over `data_dir`; `env` adds `HINDSIGHT_*` settings (e.g. the embedder)."""
    server = ServerProcess(data_dir, SECRET, log, env)
    await anyio.to_thread.run_sync(server.start)
    return server
