"""`hindsight`, the command line (docs/OPERATIONS.md § "The hindsight command"); the entry point is
`gateway.cli.main:main` (`python -m gateway.cli` runs it too). Nothing is imported here: the evaluation harness and
the benchmarks import `errors` and `progress` without loading the whole command line.

- `main`: the parser tree, `serve` and `token`, and the one `error:` line a failure prints;
- `admin`: export, import, purge, select, forget-selected, erase, maintain (an admin token, or the data directory);
- `eval`: `hindsight eval locomo|memorybank|cases`;
- `reembed`: switching the embedding model;
- `errors` and `progress`: the error line, the CLI's HTTP client, progress bars on a terminal.
"""
