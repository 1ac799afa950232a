# hindsight: `make run` serves the embedded gateway, `make test` runs the suite. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint format bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# `make run PORT=9000` serves on another port (PORT given on the command line sets HINDSIGHT_PORT).
run: $(STAMP)
	$(if $(filter command line,$(origin PORT)),HINDSIGHT_PORT=$(PORT) )$(BIN)/hindsight serve --print-token

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2

lint: $(STAMP)
	$(BIN)/ruff check gateway tenancy memory ops bench tests
	$(BIN)/ruff format --check gateway tenancy memory ops bench tests
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix gateway tenancy memory ops bench tests
	$(BIN)/ruff format gateway tenancy memory ops bench tests

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# Helm chart check without a helm binary: Helm's Go library from helm-sdkpy (PyPI, needs Python >= 3.12) in
# .venv-helm, created on first use by deploy/helm_check.py. Lints helm/hindsight and renders its defaults.
.PHONY: helm-venv helm-lint

helm-venv:
	$(PYTHON) deploy/helm_check.py --ensure-venv

helm-lint: helm-venv
	$(PYTHON) deploy/helm_check.py --summary

# Benchmarks (bench/): `make bench` writes bench/RESULTS.md (takes several minutes); `make bench-quick` runs the
# same code on small sizes in under a minute and writes bench/RESULTS-quick.md (not committed).
bench: $(STAMP)
	$(BIN)/python -m bench

bench-quick: $(STAMP)
	$(BIN)/python -m bench --quick

# requirements.lock: every package of the image ([all] + setuptools, the build backend), pinned with sha256 hashes,
# for the Dockerfile's Python 3.11.14 on linux/amd64. `make lock` keeps pins that still fit pyproject.toml;
# `make lock-upgrade` moves every pin to the newest allowed release.
UV_VERSION := 0.13.9
LOCK_FLAGS := pyproject.toml - --extra all --generate-hashes --python-version 3.11.14 \
	--python-platform x86_64-manylinux_2_36 --custom-compile-command 'make lock' -o requirements.lock

.PHONY: lock lock-upgrade

$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet 'uv==$(UV_VERSION)'

lock: $(BIN)/uv
	printf 'setuptools>=69\n' | $(BIN)/uv pip compile --quiet $(LOCK_FLAGS)

lock-upgrade: $(BIN)/uv
	printf 'setuptools>=69\n' | $(BIN)/uv pip compile --quiet --upgrade $(LOCK_FLAGS)
