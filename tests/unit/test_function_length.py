"""No function of the application is longer than 60 lines (its `def` line to its last):
a longer one is split into named steps, each with a docstring saying why, so a reader
sees the shape before the detail. The tests and bench are not held to it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "services", "tools", "storage")
MAX_LINES = 60


def too_long(root: Path, packages: tuple[str, ...]) -> list[str]:
    """Each function over `MAX_LINES` under `root`'s `packages`, as path:line name (n)."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    where = path.relative_to(root)
                    found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_longer_than_60_lines() -> None:
    assert len(list((ROOT / "bot").rglob("*.py"))) > 50  # the packages were found
    assert too_long(ROOT, PACKAGES) == []


def test_a_function_of_61_lines_is_named(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES - 1))
    source = f"class C:\n    async def long(self) -> None:\n{body}\n        return None\n"
    (tmp_path / "pkg" / "m.py").write_text(source, encoding="utf-8")
    assert too_long(tmp_path, ("pkg",)) == ["pkg/m.py:2 long (61 lines)"]
