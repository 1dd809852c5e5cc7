# django-mcp-tools: `make run` serves the demo, `make test` runs the whole suite.
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
PYTHON ?= python3

.PHONY: install browser wrk run test test-sqlite test-postgres lint bench bench-peers soak scale-test clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=24,<27"
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

install: $(VENV)/.installed

run: install
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py load_demo_tools
	$(PY) manage.py demo_superuser
	$(PY) manage.py seed_library  # the demo library: 10,000 books (bulk_create; idempotent)
	$(PY) manage.py mcp_sync_toolsets  # its model toolsets as tool rows (idempotent)
	@echo "MCP endpoint: http://$(HOST):$(PORT)/mcp   admin: http://$(HOST):$(PORT)/admin/"
	@echo "With MCP_AUTH=oauth, a token: HOST=$(HOST) PORT=$(PORT) $(PY) manage.py mcp_token --user admin --scopes all"
	HOST=$(HOST) PORT=$(PORT) exec $(PY) -m project.run

# Debian's Chromium and ChromeDriver for the admin browser test, installed when missing (root and
# apt); never a browser downloaded at run time. Without them that test skips, or fails with CI=true.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { echo "installing chromium and chromium-driver"; apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } || \
	  echo "could not install chromium and chromium-driver"

# wrk, the load generator of the benchmarks, from Debian when missing (root and apt); without it
# they fall back to bench/loadgen.py, which costs more CPU per request.
wrk:
	@command -v wrk >/dev/null || \
	  { echo "installing wrk"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk; } || \
	  echo "could not install wrk: the benchmarks use bench/loadgen.py"

test: install browser
	$(PY) -m pytest
	MCP_TEST_DB=postgres $(PY) -m pytest tests/integration tests/unit -q

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy mcp_tools project
	$(VENV)/bin/lint-imports  # the layers of ARCHITECTURE.md, written as contracts in .importlinter

bench: install wrk
	$(PY) bench/run.py
	$(PY) bench/peers.py --quick  # 3 s runs here (about 3 min); `make bench-peers` is the full one
	$(PY) bench/profile_call.py  # where a tools/call's time goes, beside django-mcpz (in process)
	$(PY) bench/catalog.py
	$(PY) bench/tasks.py
	$(PY) bench/listeners.py
	$(PY) bench/batch_flood.py  # 1 MiB JSON-RPC batches for 30 s: RSS growth <= 50 MB (about 40 s)
	$(PY) bench/models.py

# Ours against django-mcpz, django-mcp-server and the official SDK, each in its own venv under
# var/bench-peers/ made from bench/peers/*.txt (PyPI), 2 processes each (about 17 min).
bench-peers: install wrk
	$(PY) bench/peers.py

soak: install  # 10 minutes of mixed traffic against one server (the suite runs 60 s of it)
	MCP_SOAK_SECONDS=$${MCP_SOAK_SECONDS:-600} $(PY) -m pytest tests/e2e/test_soak.py -q -s -p no:cacheprovider --timeout=1200

scale-test: install  # several hosts as network namespaces (needs root and iproute2); see README "Several hosts"
	$(PY) -m pytest tests/e2e/test_scale.py -v -s -p no:cacheprovider

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache tests/e2e/js/node_modules

.PHONY: docs dist
# The documentation site (Sphinx, Furo, MyST) into var/docs/html; warnings are errors, and -n
# reports every reference that does not resolve.
docs: install
	$(VENV)/bin/sphinx-build -W --keep-going -n -q -b html docs var/docs/html
	@echo "docs: var/docs/html/index.html"

# The sdist and the wheel into dist/, checked by twine (metadata, README rendering).
dist: install
	rm -rf dist
	$(PY) -m build -o dist .
	$(VENV)/bin/twine check --strict dist/*
