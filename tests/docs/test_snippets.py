"""Every snippet of the README and of docs/ runs as pasted (issue #31.4), against one `hindsight serve --print-token`
on a free port, started in a folder of its own as a newcomer starts it:

- a ```python block is a complete program: it runs with this Python, its dev token in `HINDSIGHT_TOKEN` and its
  URL in `HINDSIGHT_URL` (a snippet that names `http://127.0.0.1:8080` gets the server's address instead);
- a ```sh block runs in bash (`set -e`) in the server's folder, where `.venv/bin/hindsight` is this Python's
  `hindsight` and `./data` the server's data directory, so the tokens it mints are the server's;
- a block that cannot run here (it needs Docker, kubectl, a Claude CLI, a download) is preceded by the comment
  `<!-- snippet: skip (why) -->`, and the test checks each one says why.

They run in the order of `DOCUMENTS`, each file top to bottom; docs/ADMINISTRATION.md last, as it purges a
namespace and moves the server to another embedding model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ops.deploy_support import ready_gateway

ROOT = Path(__file__).resolve().parents[2]
LAST = ("docs/ADMINISTRATION.md",)
DOCUMENTS = [
    "README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md") if str(p.relative_to(ROOT)) not in LAST),
    *LAST,
]
FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```$", re.M | re.S)
SKIP = re.compile(r"<!-- snippet: skip \((?P<why>[^)]+)\) -->\s*$")
RUN = {"python", "sh"}
DEFAULT_BASE = "http://127.0.0.1:8080"
DEADLINE_S = 600


@dataclass(frozen=True)
class Snippet:
    document: str
    line: int
    lang: str
    body: str
    skip: str | None  # the reason given, when it cannot run here

    @property
    def name(self) -> str:
        return f"{self.document}:{self.line}"


def snippets() -> list[Snippet]:
    found: list[Snippet] = []
    for document in DOCUMENTS:
        text = (ROOT / document).read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match["lang"] not in RUN:
                continue
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before)
            line = text.count("\n", 0, match.start()) + 1
            found.append(Snippet(document, line, match["lang"], match["body"], skip["why"] if skip else None))
    return found


@dataclass(frozen=True)
class Server:
    folder: Path
    base: str
    token: str


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("newcomer")
    (folder / ".venv").mkdir()
    (folder / ".venv" / "bin").symlink_to(Path(sys.executable).parent, target_is_directory=True)
    hindsight = Path(sys.executable).parent / "hindsight"
    assert hindsight.exists(), f"{hindsight}: the package's console script (pip install -e .)"
    with ready_gateway([sys.executable, "-m", "gateway.cli", "serve", "--print-token"], cwd=folder) as (base, out):
        token = re.search(r"dev token .*?\n\n  (\S+)\n", out, re.S)
        assert token, out
        yield Server(folder, base, token.group(1))


def run(snippet: Snippet, server: Server) -> subprocess.CompletedProcess[str]:
    body = snippet.body.replace(DEFAULT_BASE, server.base)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_TOKEN": server.token, "HINDSIGHT_URL": f"{server.base}/mcp", "TOKEN": server.token}
    if snippet.lang == "python":
        script = server.folder / "example.py"
        script.write_text(body, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-e", "-c", body]
    return subprocess.run(
        command, cwd=server.folder, env=env, capture_output=True, text=True, timeout=DEADLINE_S, check=False
    )


ALL = snippets()


def test_the_documents_hold_snippets_and_each_one_that_cannot_run_here_says_why() -> None:
    assert {s.document for s in ALL} >= {"README.md", "docs/USING.md", "docs/CLIENTS.md", "docs/ADMINISTRATION.md"}
    assert all(s.skip is None or len(s.skip.split()) >= 3 for s in ALL)
    assert sum(s.skip is None for s in ALL) >= 8


@pytest.mark.parametrize("snippet", [s for s in ALL if s.skip is None], ids=lambda s: s.name)
def test_the_snippet_runs_as_pasted(snippet: Snippet, server: Server) -> None:
    done = run(snippet, server)
    assert done.returncode == 0, f"{snippet.name}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    if snippet.lang == "python":
        assert done.stdout.strip(), f"{snippet.name} printed nothing"
