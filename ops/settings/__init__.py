"""The gateway's settings by concern, each group a pydantic model of its own: `serving` (the HTTP server),
`backends` (where memories live: the data directory, Redis, Qdrant), `models` (the embedder and the optional LLM),
`limits` (request and recall sizes), `rate_limits` (token buckets, refusals, idempotency), `maintenance` (the
background passes and what they keep), `auth` (tokens and keys), `observability` (logs, traces, metrics, the
recall log) and `weights` (the engine's own `memory.recall.scoring.ScoringWeights`, as declared there; a tenant's
overrides in `weights.ScoringOverrides`, derived from it).

`ops.config.Settings` holds one of each and reads them from the flat `HINDSIGHT_*` variables they always had
(`HINDSIGHT_REDIS_URL` is `settings.backends.redis_url`): the environment, `.env` and the secret files are read
against the flat names (`ops.settings.sources`), and the values are routed into their groups before validation.
"""
