"""Without the npm registry the Medusa engine tests are skipped with one clear line; any
other install failure is an error (a real bug must fail, not skip). A stand-in `npm`
first on PATH fails the way npm does; the install goes to a temporary cache."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from tests.shop_engine import medusa_engine


def fake_npm(folder: Path, output: str) -> None:
    npm = folder / "npm"
    npm.write_text(f"#!/bin/sh\necho '{output}' >&2\nexit 1\n", encoding="utf-8")
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_an_unreachable_registry_skips_with_the_reason(cache: Path) -> None:
    fake_npm(cache, "npm error code ENOTFOUND\nnpm error getaddrinfo ENOTFOUND registry.npmjs.org")
    with pytest.raises(pytest.skip.Exception) as skipped:
        medusa_engine.install_dir()
    assert str(skipped.value) == "Medusa engine tests skipped: npm registry unreachable (ENOTFOUND)"
    assert not list((cache / "cache").glob("shop-support-bot/*/.installed"))


def test_another_install_failure_is_an_error(cache: Path) -> None:
    fake_npm(cache, "npm error code EINTEGRITY")
    with pytest.raises(RuntimeError, match="EINTEGRITY"):
        medusa_engine.install_dir()


def test_the_install_is_keyed_by_the_lock(cache: Path) -> None:
    """A finished install (its stamp) is reused without running npm at all."""
    fake_npm(cache, "npm must not run")
    lock = (medusa_engine.SOURCE / "package-lock.json").read_bytes()
    target = (
        cache / "cache" / "shop-support-bot" / f"medusa-{hashlib.sha256(lock).hexdigest()[:16]}"
    )
    target.mkdir(parents=True)
    (target / ".installed").write_text("ok\n")
    assert medusa_engine.install_dir() == target
