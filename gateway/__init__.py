"""The gateway: what a remote agent talks to (streamable-HTTP MCP with a JWT) and what an operator runs.

- `web/`: the HTTP app (`create_app(settings)`), its routes and gates in front of `/mcp`, connection limits,
  fairness between tenants, tracing and metrics, the debug views.
- `services/`: what one running gateway holds: the runtime assembled from settings, the state replicas share,
  background work, scheduled maintenance, the adapter that builds the engine's re-embedding from settings.
- `tools/`: the MCP tools and the one boundary every call passes; `operations/`: one argument model per
  operation (schema, checks, engine request); `answers/` and `recall_answer/`: what the tools answer.
- `admin/`: the admin tools over selections and erasure; `cli/`: the `hindsight` command line;
  `evaluation/`: the evaluation harness (`hindsight eval`, and the benchmarks that reuse it).
- `errors.py`: the one error table, for tool errors and HTTP answers alike.
"""
