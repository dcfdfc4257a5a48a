"""No INTERNALERROR while pytest formats a failure (a pytest plugin, used by tests/conftest.py).

CPython before 3.11.8 (and 3.12.0-3.12.1) keeps the AST constructor's recursion counter in
one global (gh-106905). To show a failure, pytest parses the test's whole module; a
garbage collection during that parse can run a finalizer that parses too, and the outer
parse then ends in `SystemError: AST constructor recursion depth mismatch`, which stops
the whole session. In this suite such finalizers are ordinary: an asyncio task whose
exception nobody retrieved logs it with its traceback, and 3.11's traceback module parses
each line to place its carets. So before a failure is formatted, the garbage is collected
(its finalizers run outside any parse), and no collection runs while pytest formats it.
"""

from __future__ import annotations

import gc
from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    if call.excinfo is None or call.excinfo.errisinstance(pytest.skip.Exception):
        return (yield)  # nothing to format: the common case stays free
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        if enabled:
            gc.enable()
