"""The HTTP app: the factory `create_app` (`app`), the plain routes and gates in front of `/mcp` (`routes`,
`rate_limit_gate`, `refusals`), connection limits (`connections`), fairness between tenants (`fairness`), tracing
and metrics (`observability`), per-request values (`request_context`) and the debug views (`debug`)."""
