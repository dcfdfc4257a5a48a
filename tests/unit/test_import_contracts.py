"""The import contracts `make check` runs (pyproject.toml, import-linter) still say what
docs/architecture.md promises: the runtime and the feature catalog import no aiogram,
not even through another module, and simulate reaches it only through the imports its
contract lists. A contract loosened by mistake (an ignored import, indirect imports
allowed) would let Telegram back into them with `make check` still clean."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _forbidding(source: str) -> dict[str, Any]:
    (contract,) = [
        c for c in _contracts() if c["type"] == "forbidden" and c["source_modules"] == [source]
    ]
    return contract


def test_the_runtime_and_the_feature_catalog_import_no_aiogram_even_indirectly() -> None:
    for source in ("bot.runtime", "bot.runtime.feature_catalog"):
        contract = _forbidding(source)
        assert "aiogram" in contract["forbidden_modules"]
        assert not contract.get("allow_indirect_imports", False)
        assert not contract.get("ignore_imports")
    assert "bot.telegram" in _forbidding("bot.runtime.feature_catalog")["forbidden_modules"]


def test_simulate_reaches_aiogram_only_through_its_listed_imports() -> None:
    contract = _forbidding("bot.programs.simulate")
    assert contract["forbidden_modules"] == ["aiogram"]
    assert not contract.get("allow_indirect_imports", False)
    ignored = contract["ignore_imports"]
    # none of them names aiogram itself or a wildcard that would hide a new path
    assert all("aiogram" not in line and "*" not in line for line in ignored)
    assert len(ignored) <= 7  # the list only shrinks (docs/architecture.md says why)


def test_make_check_runs_the_contracts_and_the_features_lint() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    check = re.search(r"^check:.*\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert check is not None
    assert "lint-imports" in check.group(1)
    assert "-m bot.telegram.features.lint" in check.group(1)
