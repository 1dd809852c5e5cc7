# django-mcp-tools: `make run` serves the demo, `make check` is the quick gate, `make test` runs
# the whole suite (what CI runs). `make help` lists the targets (their `## ` comments).
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
PYTHON ?= python3
# Tests with their own test database, no server: run on 2 processes (pytest-xdist).
FAST_TESTS := tests/unit tests/integration $(wildcard tests/security)
DB_TESTS := tests/integration $(wildcard tests/security)
XDIST ?= -n 2
# The e2e files wait on servers, workers and browsers much of the time: three at once keep the two
# cores busier (measured: 6:33 on 2 processes, 5:17 on 3, idle machine).
E2E_XDIST ?= -n 3
# Every Hypothesis test draws the same examples on every run (tests/conftest.py); the fuzz, soak
# and scale tests use their fixed seeds unless MCP_FUZZ_SEED, MCP_SOAK_SEED, MCP_SCALE_SEED say.
HYPOTHESIS_PROFILE ?= ci
export HYPOTHESIS_PROFILE
# Bytecode caches (and pytest's rewritten test modules) are written even where the environment
# says PYTHONDONTWRITEBYTECODE: without them every server, worker and command a test starts
# compiles the project again, and every pytest process rewrites its plugins' asserts.
unexport PYTHONDONTWRITEBYTECODE

.DEFAULT_GOAL := help
.PHONY: help install browser wrk run check test test-sqlite test-postgres test-e2e test-next test-next-sqlite test-next-postgres test-next-wheel lock-next lint fuzz \
	fuzz-replay bench bench-peers soak scale-test clean clean-next

help:  ## this list
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk '{ name = $$1; sub(/:$$/, "", name); text = $$0; sub(/^[^#]*## /, "", text); printf "  %-14s %s\n", name, text }'

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=24,<27"
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

install: $(VENV)/.installed  ## the venv (.venv) with the project and its dev tools (requirements.txt)

run: install  ## the demo site (SQLite) with a Celery worker, at 127.0.0.1:8000 (HOST, PORT)
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py load_demo_tools
	$(PY) manage.py demo_superuser
	$(PY) manage.py seed_library  # the demo library: 10,000 books (bulk_create; idempotent)
	$(PY) manage.py mcp_sync_toolsets  # its model toolsets as tool rows (idempotent)
	$(PY) manage.py mcp_search_index  # progressive discovery's search entries (MCP_DISCOVERY=on|auto)
	@echo "MCP endpoint: http://$(HOST):$(PORT)/mcp   admin: http://$(HOST):$(PORT)/admin/"
	@echo "With MCP_AUTH=oauth, a token: HOST=$(HOST) PORT=$(PORT) $(PY) manage.py mcp_token --user admin --scopes all"
	HOST=$(HOST) PORT=$(PORT) exec $(PY) -m project.run

# Debian's Chromium and ChromeDriver for the admin browser test, installed when missing (root and
# apt); never a browser downloaded at run time. Without them that test skips, or fails with CI=true.
browser:  ## Debian's chromium and chromedriver for the admin browser test, when missing
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { echo "installing chromium and chromium-driver"; apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } || \
	  echo "could not install chromium and chromium-driver"

# wrk, the load generator of the benchmarks, from Debian when missing (root and apt); without it
# they fall back to bench/loadgen.py, which costs more CPU per request.
wrk:  ## Debian's wrk for the benchmarks, when missing
	@command -v wrk >/dev/null || \
	  { echo "installing wrk"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; } || \
	  echo "could not install wrk: the benchmarks use bench/loadgen.py"

check: lint test-fast  ## the quick gate: lint, then unit + integration (+ security) tests on SQLite

# CI's order: the tests that keep both cores busy one after another, and beside the e2e tests,
# which wait on servers, clients and browsers for much of their time, the PostgreSQL pass and
# the second stack's wheel test (pip); the timing tests alone. Each part's output is printed
# whole when it ends.
test: install browser  ## everything, as CI runs it: SQLite, the timing tests, then the e2e tests beside PostgreSQL and the wheel on the second stack, then the rest of the second stack
	$(PY) -m pytest $(FAST_TESTS) $(XDIST) -q
	$(MAKE) --no-print-directory test-e2e-timing
	$(NEXT) true  # the second stack's chroot and venv (CI made them during the first part)
	$(MAKE) --no-print-directory -j3 --output-sync=target test-e2e-loaded test-postgres test-next-wheel
	$(MAKE) --no-print-directory -j2 --output-sync=target test-next-sqlite test-next-postgres

test-fast: install  ## unit + integration (+ security) tests on SQLite, 2 processes
	$(PY) -m pytest $(FAST_TESTS) $(XDIST) -q

test-sqlite: install browser  ## the SQLite pass: unit + integration (+ security) on 2 processes, then every e2e test
	$(PY) -m pytest $(FAST_TESTS) $(XDIST) -q
	$(MAKE) --no-print-directory test-e2e

test-e2e: install browser  ## the e2e tests (real servers, SDK clients, conformance, browser, worker, scale): 3 files at a time, then the timing tests alone
	$(MAKE) --no-print-directory test-e2e-loaded
	$(MAKE) --no-print-directory test-e2e-timing

test-e2e-loaded: install browser  # the e2e tests that hold under load, 3 files at a time
	$(PY) -m pytest tests/e2e -m "not timing" $(E2E_XDIST) --dist loadfile --no-loadscope-reorder --durations=30

test-e2e-timing: install browser  # the e2e tests that time something, alone on the machine
	$(PY) -m pytest tests/e2e -m timing --durations=5

test-postgres: install  ## integration (+ security) on PostgreSQL (127.0.0.1:5432), 2 processes (the unit tests use no database)
	MCP_TEST_DB=postgres $(PY) -m pytest $(DB_TESTS) $(XDIST) -q

# The second stack (README "Supported versions"): Django 6.1 on Python 3.13, the Python from Debian
# 13's packages in a chroot that debootstrap makes, the rest from PyPI as requirements-next.txt pins
# it. .ci/next-stack runs a command there (root; the chroot and its venv are cached outside the
# checkout, in ${XDG_CACHE_HOME:-~/.cache}/django-mcp-tools/next). Its own PostgreSQL databases.
NEXT := .ci/next-stack
NEXT_PYTEST := $(NEXT) python -m pytest -p no:cacheprovider
NEXT_DB_NAME ?= test_mcp_next

# The three parts run at once, each part's output printed whole when it ends: each pass leaves a
# core idle part of the time (tests that wait on threads, timeouts, PostgreSQL), and the wheel test
# waits on pip (measured: at once 3:10 on a quiet machine, 6:40 beside other work, load median 6.5;
# one after another 8:38, load 1 to 5).
test-next:  ## Django 6.1 + Python 3.13 (a cached Debian 13 chroot): unit + integration (+ security) on SQLite, on PostgreSQL, and the wheel test, at once
	$(NEXT) true  # the chroot and the venv, made once before the three parts use them
	$(MAKE) --no-print-directory -j3 --output-sync=target test-next-sqlite test-next-postgres test-next-wheel

test-next-sqlite:
	$(NEXT_PYTEST) $(FAST_TESTS) $(XDIST) -q
test-next-postgres:
	MCP_TEST_DB=postgres MCP_TEST_DB_NAME=$(NEXT_DB_NAME) $(NEXT_PYTEST) $(DB_TESTS) $(XDIST) -q
test-next-wheel:
	$(NEXT_PYTEST) tests/e2e/test_wheel.py -q

lock-next:  ## resolve requirements-next.txt again (Django 6.1, Python 3.13, the dev extra)
	$(NEXT) --lock

clean-next:  ## remove the second stack's cached chroot and venvs
	rm -rf "$${MCP_NEXT_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/django-mcp-tools/next}"

# `make fuzz` is not part of CI (which runs one fixed seed, tests/e2e/test_fuzz.py FIXED_SEED).
fuzz: install  ## fresh random fuzz seeds for FUZZ_SECONDS (default 600); prints each seed and how to replay a failure
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} $(PY) -m tests.support.fuzz_loop

fuzz-replay: install  ## one fuzz seed again, same requests in the same order: MCP_FUZZ_SEED=N [MCP_FUZZ_REQUESTS=N] make fuzz-replay
	@test -n "$$MCP_FUZZ_SEED" || { echo "fuzz-replay: set MCP_FUZZ_SEED (make fuzz prints it)"; exit 2; }
	$(PY) -m pytest tests/e2e/test_fuzz.py::test_fuzz_endpoint -q -s -p no:cacheprovider

lint: install  ## ruff (check, format), mypy and the import contracts
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy mcp_tools project
	$(VENV)/bin/lint-imports  # the layers of ARCHITECTURE.md, written as contracts in .importlinter

bench: install wrk  ## the benchmarks (bench/README.md)
	$(PY) bench/run.py
	$(PY) bench/peers.py --quick  # 3 s runs here (about 3 min); `make bench-peers` is the full one
	$(PY) bench/profile_call.py  # where a tools/call's time goes, beside django-mcpz (in process)
	$(PY) bench/catalog.py
	$(PY) bench/tasks.py
	$(PY) bench/listeners.py
	$(PY) bench/batch_flood.py  # 1 MiB JSON-RPC batches for 30 s: RSS growth <= 50 MB (about 40 s)
	$(PY) bench/models.py
	$(PY) bench/discovery.py  # progressive discovery: recall@3, search p99 at 10,000 tools, tools/list bytes (about 5 min)

# Ours against django-mcpz, django-mcp-server and the official SDK, each in its own venv under
# var/bench-peers/ made from bench/peers/*.txt (PyPI), 2 processes each (about 17 min).
bench-peers: install wrk  ## ours against three other MCP servers, full length (about 17 min)
	$(PY) bench/peers.py

soak: install  ## 10 minutes of mixed traffic against one server, a fresh seed (the suite: 60 s, fixed seed)
	MCP_SOAK_SECONDS=$${MCP_SOAK_SECONDS:-600} MCP_SOAK_SEED=$${MCP_SOAK_SEED:-random} $(PY) -m pytest tests/e2e/test_soak.py -q -s -p no:cacheprovider --timeout=1200

scale-test: install  ## several hosts as network namespaces (root, iproute2); README "Several hosts"
	$(PY) -m pytest tests/e2e/test_scale.py -v -s -p no:cacheprovider

clean:  ## remove the venv, var/ and the caches
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache tests/e2e/js/node_modules

.PHONY: docs docs-reference dist
# The documentation site (Sphinx, Furo, MyST) into var/docs/html; warnings are errors, and -n
# reports every reference that does not resolve. Read the Docs builds the same (.readthedocs.yaml).
docs: install  ## the documentation site into var/docs/html (warnings are errors)
	$(VENV)/bin/sphinx-build -W --keep-going -n -q -b html docs var/docs/html
	@echo "docs: var/docs/html/index.html"

# The parts of the docs generated from the code and the tutorial's files (the settings, commands
# and checks tables, the tutorial's code), written into the Markdown pages so they read where
# they land; `make docs` and tests/unit/test_docs_current.py fail while they are out of date.
docs-reference: install  ## write the generated parts of the docs again (docs/_ext/mcp_reference.py)
	$(PY) docs/_ext/mcp_reference.py

# The sdist and the wheel into dist/, checked by twine (metadata, README rendering).
dist: install
	rm -rf dist
	$(PY) -m build -o dist .
	$(VENV)/bin/twine check --strict dist/*
