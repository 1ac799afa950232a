"""`hindsight`, the command line (docs/OPERATIONS.md § "The hindsight command"):

- `main`: the parser tree, `serve` and `token`, and the one `error:` line a failure prints;
- `admin`: export, import, purge, select, forget-selected, erase, maintain (an admin token, or the data directory);
- `eval`: `hindsight eval locomo|memorybank|cases`;
- `reembed`: switching the embedding model;
- `errors` and `progress`: the error line, the CLI's HTTP client, progress bars on a terminal.
"""

from gateway.cli.main import main

__all__ = ["main"]
