"""A failure is reported as a failure, never as an INTERNALERROR (tests/failure_reports.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.launch import REPO_ROOT

# a failing test that leaves garbage whose finalizer parses, as 3.11's traceback module
# does when an unretrieved task exception is logged; the collection threshold makes the
# collector run while pytest parses this (long) module to show the failure
FAILING_TEST = """
import ast, gc

class ParsesWhenCollected:
    def __init__(self):
        self.cycle = self

    def __del__(self):
        ast.parse("x = a[1] + b * 2")

def test_fails_with_garbage_around():
    gc.disable()
    for _ in range(200):
        ParsesWhenCollected()
    gc.set_threshold(5000)
    gc.enable()
    assert False
"""
FILLER = "".join(f"def f{i}(x):\n    return [x + {i} for _ in range({i})]\n" for i in range(2000))
AFFECTED = sys.version_info < (3, 11, 8) or (3, 12) <= sys.version_info < (3, 12, 2)


def _pytest(folder: Path, *plugins: str) -> subprocess.CompletedProcess[str]:
    options = [arg for plugin in plugins for arg in ("-p", plugin)]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "."],
        cwd=folder,
        # pytest alone: an installed plugin (pytest-xdist, say) allocates at start-up, and
        # the collector would then run at another moment than inside the failure's parse
        env={
            "PYTHONPATH": str(REPO_ROOT),
            "PATH": "/usr/bin:/bin",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        },
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_failure_with_parsing_garbage_is_reported_as_a_failure(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(FAILING_TEST + FILLER)
    guarded = _pytest(tmp_path, "tests.failure_reports")
    assert guarded.returncode == 1, guarded.stdout + guarded.stderr  # 1: tests failed
    assert "INTERNALERROR" not in guarded.stdout + guarded.stderr
    assert "1 failed" in guarded.stdout
    if AFFECTED:  # the same run without the guard is what stopped the suite
        unguarded = _pytest(tmp_path)
        assert "AST constructor recursion depth mismatch" in unguarded.stdout + unguarded.stderr
