# Two entry points: `make run` and `make test`. Both create .venv and install the project
# on first use (and again whenever pyproject.toml changes); only Python 3.11+ is needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m bot

# The static checks run first: a layer violation, a too-complex function (C901 > 12) or a
# type error fails the suite before any test runs.
test: check
	$(BIN)/python -m pytest

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

lint: $(STAMP)
	$(BIN)/ruff check .

# The whole-bot benchmark (docs/benchmarks.md); measures and reports, never fails on a
# missed target. `make bench ARGS=--quick` for a one-minute smoke run.
bench: $(STAMP)
	$(BIN)/python -m bench.run $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
