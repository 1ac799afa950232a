"""The memory allocator `hindsight serve` runs with: jemalloc (Debian's `libjemalloc2`) where the machine has it.

The embedded engine allocates and frees on every query (a quarter of its CPU went to glibc's malloc/free, issue
#33); jemalloc halves that. An allocator can only be chosen before the process starts, so `serve` re-executes
itself once with `LD_PRELOAD` naming the library (`reexec_with_jemalloc`), unless the setting `jemalloc` is off,
the library is absent, or it is already preloaded. Nothing else changes: the same interpreter, arguments and
environment. The Docker image installs the library; elsewhere it is used when found.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

# Where Debian and Ubuntu's libjemalloc2 puts the library, per architecture; then the usual local prefix.
JEMALLOC_CANDIDATES = (
    Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"),
    Path("/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"),
    Path("/usr/lib64/libjemalloc.so.2"),
    Path("/usr/local/lib/libjemalloc.so.2"),
)
# Set in the re-executed process: it never tries again, even if the loader could not preload the library.
REEXEC_MARK = "HINDSIGHT_ALLOCATOR_REEXEC"


def find_jemalloc(candidates: Sequence[Path] = JEMALLOC_CANDIDATES) -> Path | None:
    """The first jemalloc shared library that exists, or None."""
    return next((path for path in candidates if path.is_file()), None)


def jemalloc_preloaded(environ: Mapping[str, str]) -> bool:
    """Whether `LD_PRELOAD` already names a jemalloc library."""
    return any("jemalloc" in Path(entry).name for entry in environ.get("LD_PRELOAD", "").replace(":", " ").split())


def preload_environment(environ: Mapping[str, str], library: Path) -> dict[str, str]:
    """`environ` with `library` first in `LD_PRELOAD` (after nothing it already held) and the re-exec mark."""
    preload = " ".join(part for part in (str(library), environ.get("LD_PRELOAD", "").strip()) if part)
    return {**environ, "LD_PRELOAD": preload, REEXEC_MARK: "1"}


def allocator_in_use(pid: int | str = "self") -> str:
    """ "jemalloc" when the process has the library mapped (`/proc/<pid>/maps`), else "system"."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return "unknown"
    return "jemalloc" if "libjemalloc" in maps else "system"


def reexec_with_jemalloc(enabled: bool, environ: Mapping[str, str] | None = None) -> None:
    """Replace this process by the same command with jemalloc preloaded, when `enabled`, found and not yet done;
    return (and run with the system allocator) otherwise."""
    env = dict(os.environ if environ is None else environ)
    if not enabled or env.get(REEXEC_MARK) or jemalloc_preloaded(env) or "serve" not in sys.orig_argv:
        return  # `serve` only: never re-execute a process that merely called the command (a test runner)
    library = find_jemalloc()
    if library is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], preload_environment(env, library))
