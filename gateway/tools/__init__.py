"""The MCP tools: the server object (`server`), the one boundary every call passes (`boundary`), strict
arguments (`arguments`), idempotent calls (`idempotent`), audit records (`audit`), and the tools by concern:
`memory` (write, recall, list, forget...), `batch` (write_memories), `sessions` (the agent loop), `feedback`,
`admin`, `debug`, `session_debug`, `reembed`, and the recall log's gateway side (`recall_log`)."""
