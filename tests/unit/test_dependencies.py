"""The lock files agree with pyproject.toml: every declared dependency has an upper bound
and is pinned in the locks at a version its range allows, and the image's lock
(requirements.lock) pins each package exactly as the development lock CI installs from.
A dependency changed in pyproject.toml without `make lock` fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def project() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {"runtime": data["dependencies"], "dev": data["optional-dependencies"]["dev"]}


def pins(name: str) -> dict[str, str]:
    text = (ROOT / name).read_text()
    return {
        canonicalize_name(package): version
        for package, version in re.findall(r"^([A-Za-z0-9._-]+)==([^\s;]+)", text, re.MULTILINE)
    }


@pytest.mark.parametrize("group", ["runtime", "dev"])
def test_every_dependency_is_bounded_and_locked_within_its_range(group: str) -> None:
    locked = pins("requirements-dev.lock")
    runtime_locked = pins("requirements.lock")
    for line in project()[group]:
        requirement = Requirement(line)
        uppers = [spec for spec in requirement.specifier if spec.operator in ("<", "<=", "~=")]
        assert uppers, f"{requirement.name} has no upper bound"
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement.name} is not in requirements-dev.lock"
        assert requirement.specifier.contains(locked[name]), (requirement, locked[name])
        if group == "runtime":
            assert runtime_locked.get(name) == locked[name], requirement.name


def test_the_image_lock_is_the_development_lock_minus_the_tools() -> None:
    runtime, dev = pins("requirements.lock"), pins("requirements-dev.lock")
    assert runtime, "requirements.lock is empty"
    assert {name: dev.get(name) for name in runtime} == runtime
    for tool in ("pytest", "mypy", "ruff", "pip-tools"):
        assert tool not in runtime
