# syntax=docker/dockerfile:1
# hindsight gateway image: `docker build -t hindsight:0.1.0 .`
#
# Two stages: the builder installs the package and its dependencies (all manylinux wheels, no compiler needed)
# into /opt/venv and proves that the embedding model loads offline; the runtime stage copies that venv onto a
# clean slim base and runs as an unprivileged user. Pin the base by digest too when you build for production
# (python:3.11.14-slim-bookworm@sha256:...).

FROM python:3.11.14-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY tenancy ./tenancy
COPY memory ./memory
COPY ops ./ops
RUN pip install --upgrade pip \
    && pip install .

# The embedding model (wordllama's 256-d weights and tokenizer) ships inside the wordllama wheel, and the
# gateway loads it from the package directory with disable_download=True. Prove it here, with the Hugging Face
# hub switched off, so that a container never downloads anything at start (-I: the installed package, not /src).
RUN HF_HUB_OFFLINE=1 python -I -c "from memory.embedders import build_embedder; e = build_embedder('wordllama'); print('embedder ok:', e.model_id, e.dimension)"


FROM python:3.11.14-slim-bookworm AS runtime

ARG UID=10001
ARG GID=10001

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
