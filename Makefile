# Two commands matter: `make demo` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-pythons pythons-venvs lint typecheck unit docs docs-check bench bench-schema clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m examples.demo

lint: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks chaos
	$(BIN)/ruff format --check src tests examples benchmarks chaos
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The suite in TEST_WORKERS processes (pytest-xdist): each has its own
# PostgreSQL database and temporary files. TEST_WORKERS=0 runs it in one. The
# chaos scenarios then run alone, one after another: each loads the machine
# with worker processes and checks bounds on timing, and their tests share
# scenario runs that one process makes once.
TEST_WORKERS ?= 2

# The comparison's smoke test is left to bench-compare-smoke (below): it needs
# .venv-compare, whose build and run took half a minute of every make test.
COMPARE_SMOKE := tests/integration/test_bench_compare_smoke.py

unit: $(STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --ignore=tests/chaos --ignore=$(COMPARE_SMOKE)
	$(BIN)/pytest -q tests/chaos

test: lint typecheck docs-check unit

# The other Pythons the package declares (3.11 is the one above): the unit and
# conformance suites and the HTTP tests on each, in a venv of its own
# (.venv-3.12, .venv-3.13). Each interpreter is found as pythonX.Y on the PATH
# or under pyenv's versions; a missing one fails, naming what to install.
# CI builds the venvs side by side first: make -j2 pythons-venvs.
OTHER_PYTHONS ?= 3.12 3.13
PYTHONS_SUITE := tests/unit tests/conformance tests/integration/test_http_api.py \
	tests/integration/test_http_mounted.py tests/integration/test_http_refusals.py \
	tests/integration/test_dashboard.py

.venv-%/.installed: pyproject.toml
	@python=""; for candidate in python$* $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$*.*/bin/python$* 2>/dev/null | sort -V -r); do \
		if $$candidate -c '' >/dev/null 2>&1; then python=$$candidate; break; fi; done; \
	if [ -z "$$python" ]; then echo "Python $* is not installed (pyenv install $*, or set OTHER_PYTHONS)"; exit 1; fi; \
	echo "Python $*: $$python"; \
	$$python -m venv .venv-$* && .venv-$*/bin/python -m pip install --quiet --upgrade pip \
		&& .venv-$*/bin/python -m pip install --quiet -e '.[dev]' && touch $@

.PRECIOUS: .venv-%/.installed
pythons-venvs: $(foreach version,$(OTHER_PYTHONS),.venv-$(version)/.installed)

test-pythons: $(foreach version,$(OTHER_PYTHONS),test-python-$(version))

test-python-%: .venv-%/.installed
	@echo "== Python $*"
	.venv-$*/bin/pytest -q -n $(TEST_WORKERS) -p no:cacheprovider $(PYTHONS_SUITE)

# The documentation site (mkdocs.yml, docs/): `make docs` builds it into site/ (or
# DOCS_SITE=path); a warning fails the build. Nothing in it needs the network.
DOCS_SITE ?= site
MKDOCS    := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs

docs: $(STAMP)
	$(MKDOCS) build --strict --site-dir $(DOCS_SITE)
	@echo "the documentation is in $(abspath $(DOCS_SITE))/index.html"

# What `make test` checks: a strict build into a throwaway folder, and no line of
# its output that says WARNING.
docs-check: $(STAMP)
	@site=$$(mktemp -d) && log="$$site.log"; \
	$(MKDOCS) build --strict --site-dir "$$site" > "$$log" 2>&1; status=$$?; \
	rm -rf "$$site"; \
	if [ $$status -ne 0 ] || grep -q WARNING "$$log"; then cat "$$log"; rm -f "$$log"; exit 1; fi; \
	rm -f "$$log"; echo "docs: built with mkdocs --strict, no warnings"

# The benchmark suite (benchmarks/suite, never in the wheel): SQLite and PostgreSQL,
# several minutes; JSON in benchmarks/results/latest.json (--output to change).
# make bench BENCH_ARGS="--stores sqlite --quick" for a smoke run.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.suite $(BENCH_ARGS)

# What a change to the PostgreSQL schema costs the server, measured side by side
# with the schema as it is, on fresh stores, in one sitting:
# make bench-schema SCHEMA_ARGS="--variant base= --variant lean=lean.sql"
bench-schema: $(STAMP)
	$(BIN)/python -m benchmarks.schema_cost $(SCHEMA_ARGS)

# A steady load for twenty minutes on each store, with a two-minute retention,
# sampled every 10 s (benchmarks/soak): the tables' size must level off, the
# oldest rows stay within the retention, latencies stay those of the start.
# JSON and an SVG chart in benchmarks/results/soak-STORE.*; exit 1 on a miss.
# make soak SOAK_ARGS="--minutes 2" for a short one.
.PHONY: soak
soak: $(STAMP)
	$(BIN)/python -m benchmarks.soak --store postgres --rate 1000 $(SOAK_ARGS)
	$(BIN)/python -m benchmarks.soak --store sqlite --rate 500 $(SOAK_ARGS)

# tenure beside PgQueuer (PostgreSQL) and Huey (SQLite, Redis): the same workload,
# one run, about 15 minutes. The competitors come from PyPI into a venv of their own
# (pins in benchmarks/compare/requirements.txt), with tenure installed there editable.
# make bench-compare COMPARE_ARGS="--quick" for a smoke run; JSON in benchmarks/results/.
COMPARE_VENV  := .venv-compare
COMPARE_STAMP := $(COMPARE_VENV)/.installed

$(COMPARE_STAMP): pyproject.toml benchmarks/compare/requirements.txt
	$(PYTHON) -m venv $(COMPARE_VENV)
	$(COMPARE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(COMPARE_VENV)/bin/python -m pip install --quiet -e '.[postgres]' -r benchmarks/compare/requirements.txt
	touch $@

# bench-compare-smoke: the comparison in miniature (tenure and Huey on SQLite,
# --quick), checked by its test: every measurement made, the ratios, targets and
# JSON written. CI runs it after the other suites (.ci/run); a comparison runs it
# first, so that a harness broken since the last one fails in seconds.
.PHONY: bench-compare bench-compare-smoke
bench-compare-smoke: $(STAMP) $(COMPARE_STAMP)
	$(BIN)/pytest -q -p no:cacheprovider $(COMPARE_SMOKE)

bench-compare: bench-compare-smoke
	$(COMPARE_VENV)/bin/python -m benchmarks.compare $(COMPARE_ARGS)

# The chaos suite (chaos/, never in the wheel): every scenario on SQLite and PostgreSQL
# under sustained faults, about 30 minutes; one figure line per scenario and store, exit
# code 1 on any violation. pg-crash makes a private PostgreSQL 15 cluster of its own
# (Debian's postgresql-15). make chaos CHAOS_ARGS="--quick" for the quick profile,
# which make test runs too (tests/chaos).
.PHONY: chaos
chaos: $(STAMP)
	$(BIN)/python -m chaos $(CHAOS_ARGS)

clean:
	rm -rf $(VENV) .venv-3.* .pytest_cache .mypy_cache .ruff_cache tenure.db* site
