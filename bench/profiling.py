"""Where profiled CPU is charged, and the profile it fills: the rules that put a py-spy sample of the Python
threads in a bucket (`RULES`, with the idle leaves, the plumbing frames and the hand-off bucket), the stages of one
recall those buckets sum to (`STAGES`, `stage_table`), the rules that charge a native sample of the server to an
engine cause (`CAUSE_RULES`, used by `bench.engine_causes`), and `Profile`, one profile's figures as the report
renders them. The profilers that fill it are in `bench.profilers`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

PROJECT_DIRS = ("gateway/", "memory/", "tenancy/", "ops/")

# Where a sample goes: a leaf frame that only waits (epoll, a condition variable) is idle; otherwise the first
# rule matching a frame, walking the stack from its leaf to its root and skipping plumbing frames (event loop,
# threads, contextlib), takes the sample; a stack of plumbing only is thread/event-loop hand-off.
# A rule is (bucket, file substring, function substring or None, source-line substring or None).
IDLE_LEAVES = (("selectors.py", "select"), ("threading.py", "Condition.wait"), ("threading.py", "Event.wait"))
PLUMBING = (
    "asyncio/",
    "anyio/",
    "threading.py",
    "concurrent/",
    "selectors.py",
    "contextlib.py",
    "queue.py",
    "runpy.py",
    "<frozen runpy>",
    "bench/",  # the benchmark's own driving loops
    "gateway/cli/main.py",  # roots of the server process: the event loop runs under them
    "uvicorn/main.py",
    "uvicorn/server.py",
)
HANDOFF = "event loop + thread hand-off (anyio.to_thread, wake-ups)"

# The stages of one recall (issue #19), each the sum of the buckets (and thread groups) named here; a bucket
# not named falls in "other".
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("HTTP + MCP parsing (uvicorn, h11, starlette, MCP SDK, pydantic, JSON)", (
        "HTTP server (uvicorn, h11, starlette)", "MCP SDK (JSON-RPC, sessions, transport)",
        "pydantic (MCP validation/serialisation)", "JSON encode/decode",
    )),
    ("auth (JWT verification)", ("JWT verification",)),
    ("rate-limit gate", ("rate-limit gate",)),
    ("gateway: tool boundary, middleware, metrics, logging", (
        "gateway: tools, middleware", "Prometheus metrics", "OpenTelemetry spans", "logging", "idempotency + audit",
    )),
    ("embedding + keyword vector of the query", ("embedding (wordllama)", "sparse (BM25) encoding")),
    ("engine: search threads (native, all queries)", ("native: edge-search",)),
    ("engine: dense query (calling thread)", ("engine: vector query (Rust)",)),
    ("engine: keyword query (calling thread)", ("engine: keyword query (Rust)",)),
    ("engine: payload reads by id (calling thread)", ("engine: payload reads by id (Rust)",)),
    ("payload → Memory, result conversion (store)", (
        "payload → Memory (from_payload)", "store: filters, result conversion",
    )),
    ("scoring: relevance, cues, rescoring, selection", ("rescoring + selection",)),
    ("engine service: validation, scopes, links", ("engine service: validation, ids",)),
    ("serialisation of the answer (gateway)", ("result → JSON (gateway)",)),
    ("access counts (background write)", ("engine: update / upsert (Rust)", "engine: scroll / lookup (Rust)")),
    ("event loop + thread hand-off", (HANDOFF,)),
)  # fmt: skip


def stage_table(profile: Profile) -> list[tuple[str, float]]:
    """CPU ms per call by stage: native thread groups from `/proc`, Python buckets from the samples."""
    cost = {name: main + workers for name, _share, main, workers in profile.buckets}
    cost |= {group: value for group, value in profile.thread_cpu if group.startswith("native:")}
    rows = []
    for stage, parts in STAGES:
        rows.append((stage, sum(cost.pop(part, 0.0) for part in parts)))
    rows.append(("other (interpreter, GC, stdlib, unattributed)", sum(cost.values())))
    return rows


RULES: tuple[tuple[str, str, str | None, str | None], ...] = (
    # the searches are in memory/stores/edge_search.py, the writes and lookups in edge.py: "edge" matches both
    ("engine: keyword query (Rust)", "memory/stores/edge", "keyword_query", "_shard.query"),
    ("engine: payload reads by id (Rust)", "memory/stores/edge", None, "_shard.retrieve"),
    ("engine: vector query (Rust)", "memory/stores/edge", None, "_shard.query"),
    ("engine: scroll / lookup (Rust)", "memory/stores/edge.py", None, "_shard.scroll"),
    ("engine: update / upsert (Rust)", "memory/stores/edge.py", None, "_shard.update"),
    ("engine: flush / optimize (Rust)", "memory/stores/edge.py", None, "_shard.flush"),
    ("engine: flush / optimize (Rust)", "memory/stores/edge.py", None, "_shard.optimize"),
    ("payload → Memory (from_payload)", "memory/stores/payload.py", "from_payload", None),
    ("Memory → payload + Point build", "memory/stores/payload.py", "to_payload", None),
    ("Memory → payload + Point build", "memory/stores/edge.py", "upsert", None),
    ("store: filters, result conversion", "memory/stores/", None, None),
    ("embedding (wordllama)", "wordllama", None, None),
    ("embedding (wordllama)", "memory/embedders/wordllama", None, None),
    ("rescoring + selection", "memory/recall/scoring.py", None, None),
    ("rescoring + selection", "memory/recall/ranking.py", None, None),
    ("rescoring + selection", "memory/recall/steps.py", None, None),
    ("rescoring + selection", "memory/recall/cues.py", None, None),
    ("rescoring + selection", "memory/recall/feedback.py", None, None),
    ("rescoring + selection", "memory/service.py", "_select", None),
    ("access-count bump (scheduling)", "memory/service.py", "_bump_access", None),
    ("access-count bump (scheduling)", "memory/service.py", "_schedule_access", None),
    ("write pipeline (memory/pipeline: extraction, supersession)", "memory/pipeline/", None, None),
    ("sparse (BM25) encoding", "memory/embedders/sparse", None, None),
    ("engine service: validation, ids", "memory/", None, None),
    ("OpenTelemetry spans", "opentelemetry", None, None),
    ("Prometheus metrics", "prometheus_client", None, None),
    ("rate-limit gate", "gateway/web/rate_limit_gate.py", None, None),
    ("rate-limit gate", "tenancy/rate_limit", None, None),
    ("JWT verification", "jwt/", None, None),
    ("JWT verification", "tenancy/", None, None),
    ("JWT verification", "cryptography", None, None),
    ("idempotency + audit", "gateway/tools/idempotent.py", None, None),
    ("idempotency + audit", "gateway/tools/audit.py", None, None),
    ("logging", "logging/", None, None),
    ("result → JSON (gateway)", "gateway/answers/serialize.py", None, None),
    ("result → JSON (gateway)", "gateway/errors.py", None, None),
    ("gateway: tools, middleware", "gateway/", None, None),
    ("gateway: tools, middleware", "ops/", None, None),
    ("pydantic (MCP validation/serialisation)", "pydantic", None, None),
    ("MCP SDK (JSON-RPC, sessions, transport)", "mcp/", None, None),
    ("MCP SDK (JSON-RPC, sessions, transport)", "mcp_types/", None, None),
    ("JSON encode/decode", "json/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "uvicorn/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "h11/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "httptools/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "uvloop/", None, None),
    ("HTTP server (uvicorn, h11, starlette)", "starlette/", None, None),
    ("HTTP client (httpx2): bench process", "httpx2/", None, None),
    ("HTTP client (httpx2): bench process", "httpcore", None, None),
)


# Engine CPU by cause (`bench.engine_causes`): one sample of the server process with its native stack (perf with
# DWARF unwinding, or py-spy --native), frames from the leaf to the root, goes to the first rule that matches. A
# rule is (cause, test, regular expression); the tests: `kernel-leaf` (the leaf is in the kernel and some frame's
# symbol matches), `leaf` (the leaf's symbol), `leaf-dso` (the leaf's shared object), `stack` (any frame's symbol:
# the sample is spent on behalf of that function), `stack-dso` (any frame's shared object). So the allocator and
# the scheduler are charged by the leaf whoever called them; the engine's work by what it was doing; Python's
# own allocator (pymalloc) counts as the interpreter.
ENGINE_DSO = "qdrant_edge"
WAKE_UPS = "thread-pool wake-ups, futex, scheduler"
PYO3_CAUSE = "pyo3: engine ↔ Python objects"
CAUSE_RULES: tuple[tuple[str, str, str], ...] = (
    (WAKE_UPS, "kernel-leaf", r"sched_yield|futex|schedule|try_to_wake_up|finish_task_switch|wake_up"),
    ("kernel: TCP, epoll, page faults, other syscalls", "kernel-leaf", r"."),
    (WAKE_UPS, "leaf", r"rayon_core::(registry|sleep|latch|job)|crossbeam_(deque|epoch)|sched_yield|pthread_cond|"
     r"futex|LockLatch|Condvar|::park|take_gil|drop_gil"),
    ("malloc / free (jemalloc or glibc)", "leaf-dso", r"libjemalloc|libtcmalloc"),
    ("malloc / free (jemalloc or glibc)", "leaf", r"^(__libc_|__GI___libc_)?(malloc|free|calloc|realloc|cfree)$|"
     r"_int_(malloc|free|realloc)|malloc_consolidate|tcache|unlink_chunk|__rdl_|__rust_(alloc|dealloc|realloc)|"
     r"^(sdallocx|mallocx|rallocx|je_)"),
    ("BM25: IDF counted over the filter", "stack", r"idf_statistics|corpus_idf"),
    ("payload JSON parse (serde_json, gridstore reads)", "stack",
     r"serde_json|read_payloads|gridstore|Compression>::decompress"),
    (PYO3_CAUSE, "stack", r"into_py|IntoPyObject|value_map_into_py|into_new_object|"
     r"into_bound_py_any|FromPyObject|extract_bound|frompyobject|PyList>::new"),
    ("filter checks (conditions, payload index)", "stack", r"condition_checker|ConditionChecker|check_condition|"
     r"iter_filtered_points|estimate_cardinality|filter_deferred_and_deleted|field_index|MapIndex|FilterContext|"
     r"filter_live_keys|query_points_filter"),
    ("stored vectors read (bincode, sparse)", "stack", r"read_vectors|vectors_by_offsets|bincode|StoredSparseVector"),
    ("vector math (dense + sparse scoring, HNSW)", "stack", r"hnsw|graph_layers|[Ss]corer|simd|dot_similarity|"
     r"cosine|DotProduct|metric|score_points|inverted_index|posting|bitpack|search_with_graph|plain_search"),
    ("engine: other (planning, ids, sorting, results)", "stack-dso", ENGINE_DSO),
    ("Python interpreter (libpython)", "leaf-dso", r"libpython|^python"),
    ("Python extension modules (numpy, pydantic-core, uvloop, tokenizers, ...)", "leaf-dso",
     r"site-packages|lib-dynload|\.cpython-|\.abi3\.so"),
)  # fmt: skip
OTHER_CAUSE = "other (libc, unresolved frames)"


@dataclass
class Profile:
    title: str
    tool: str
    samples: int = 0
    idle_samples: int = 0
    seconds: float = 0.0
    operations: int = 0
    rate: int = 0
    buckets: list[tuple[str, float, float, float]] = field(default_factory=list)  # share %, ms/call main, workers
    thread_cpu: list[tuple[str, float]] = field(default_factory=list)  # thread group, CPU ms per call
    top_self: list[tuple[str, float]] = field(default_factory=list)
    top_project: list[tuple[str, float]] = field(default_factory=list)
    note: str = ""
    raw_path: Path | None = None
