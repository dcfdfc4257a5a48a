# Two entry points: `make run` and `make test`. Both create .venv and install on first use
# (and again whenever the lock file changes); only Python 3.11+ is needed. `make run`
# installs what the bot needs (requirements.lock); `make test` and the other developer
# targets add the tests' and checks' tools (requirements-dev.lock) and the project itself.
# Every package is pinned with hashes, so a fresh clone (and CI) installs exactly what was
# tested; `make lock` refreshes the locks. The bot's commands: ./support-bot (README).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.installed-runtime

PIP_INSTALL := $(BIN)/python -m pip install --quiet --disable-pip-version-check
# pip-compile against PyPI itself, whatever this machine's pip configuration adds
LOCK := env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
	$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	--no-emit-index-url --no-emit-find-links --index-url https://pypi.org/simple

# pip's output goes here and is shown only when the install fails
INSTALL_LOG := $(VENV)/install.log

.PHONY: help run install test check lint bench lock clean

help:
	@echo "make run     run the bot (settings from .env); ./support-bot runs its commands"
	@echo "make test    the static checks, then the whole test suite"
	@echo "make check   ruff, mypy --strict and the import contracts"
	@echo "make lint    ruff only"
	@echo "make bench   the whole-bot benchmark (ARGS=--quick for a short run)"
	@echo "make lock    refresh both lock files after changing pyproject.toml"
	@echo "make clean   remove .venv and the tools' caches"
	@echo "The first run/test/check creates .venv and installs the locked packages."

# The venv itself, once: only Python 3.11+ is needed.
$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit("error: Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	@$(PYTHON) -m venv $(VENV)

# What the bot needs to run, nothing else (the image installs the same file).
$(RUNTIME_STAMP): requirements.lock | $(BIN)/python
	@echo "Installing the bot's locked packages into $(VENV) (once, and after a dependency change)..."
	@$(PIP_INSTALL) --require-hashes -r requirements.lock >$(INSTALL_LOG) 2>&1 \
		|| { cat $(INSTALL_LOG) >&2; \
			echo "error: installing into $(VENV) failed (pip's output above, kept in $(INSTALL_LOG))" >&2; \
			exit 1; }
	@touch $(RUNTIME_STAMP)

# The developer's set: the runtime packages plus the tests' and checks' tools, and the
# project installed editable (.venv/bin/support-bot).
$(STAMP): pyproject.toml requirements-dev.lock | $(BIN)/python
	@echo "Installing the locked packages and the test tools into $(VENV) (once, and after a dependency change)..."
	@{ $(PIP_INSTALL) --require-hashes -r requirements-dev.lock \
		&& $(PIP_INSTALL) --no-deps --no-build-isolation -e . ; } >$(INSTALL_LOG) 2>&1 \
		|| { cat $(INSTALL_LOG) >&2; \
			echo "error: installing into $(VENV) failed (pip's output above, kept in $(INSTALL_LOG))" >&2; \
			exit 1; }
	@touch $(STAMP)

# The bot's own one-line error (a set-up mistake, exit status 2) is the last word: make's
# `*** Error 2` line would only repeat it. ./support-bot returns the status for scripts.
run: $(RUNTIME_STAMP)
	@$(BIN)/python -m bot run; status=$$?; [ $$status -eq 2 ] || exit $$status

# The runtime install alone (./support-bot calls it before its first command).
install: $(RUNTIME_STAMP)

# The static checks run first: a layer violation, a too-complex function (C901 > 12), a
# type error or a feature's prompt words naming a tool it does not register
# (bot/telegram/features/lint.py) fails the suite before any test runs.
test: check
	$(BIN)/python -m pytest

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m bot.telegram.features.lint

lint: $(STAMP)
	$(BIN)/ruff check .

# The whole-bot benchmark (docs/benchmarks.md); measures and reports, never fails on a
# missed target. `make bench ARGS=--quick` for a one-minute smoke run.
bench: $(STAMP)
	$(BIN)/python -m bench.run $(ARGS)

# After changing the dependencies in pyproject.toml: new pins (with hashes) for both
# lock files, the runtime one (the container's) a subset of the development one.
lock:
	test -x $(BIN)/pip-compile || $(PIP_INSTALL) 'pip-tools>=7.6,<8'
	$(LOCK) --extra dev -o requirements-dev.lock pyproject.toml
	$(LOCK) -c requirements-dev.lock -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
