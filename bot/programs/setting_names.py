"""Warnings for settings that are set but mean nothing to the bot: `ADMIN_ID=` for
ADMIN_IDS, `SHOPNAME=` for SHOP_NAME.

pydantic-settings ignores a name it does not know, so a typo used to do nothing at all.
Every unknown name in `.env` that looks like one of ours gets one warning line with the
closest real name; in the process environment only a name that is clearly a misspelling
of ours does (PATH, HOME and the rest are left alone). A warning never stops the start.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic_settings import DotEnvSettingsSource

from bot.runtime.config import Settings

# Read from `.env` by compose.yaml / compose.instances.yaml, not by the bot itself
COMPOSE_NAMES = frozenset({"BOT_DOMAIN", "POSTGRES_PASSWORD"})
# prefixes of other tools' variables that may share a `.env` (Docker Compose, the shell)
_FOREIGN_PREFIXES = ("COMPOSE_", "DOCKER_")
# similarity to a real name (difflib ratio): enough for `.env`, whose names are meant for
# the bot, and stricter for the process environment, which is everybody's
ENV_FILE_CUTOFF = 0.75
ENVIRONMENT_CUTOFF = 0.9
_PREFIXES = frozenset(
    name.split("_", 1)[0].upper() for name in Settings.model_fields if "_" in name
)
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def known_names() -> frozenset[str]:
    """Every setting of the bot (the features' groups too), upper case, and the names
    compose reads from `.env`."""
    from bot.telegram.features.registry import FEATURES  # the feature modules: only when asked

    groups = [spec.settings.model_fields for spec in FEATURES]
    names = {name for fields in (Settings.model_fields, *groups) for name in fields}
    return frozenset(name.upper() for name in names) | COMPOSE_NAMES


def closest_name(name: str, known: Iterable[str], cutoff: float) -> str | None:
    found = difflib.get_close_matches(name.upper(), sorted(known), n=1, cutoff=cutoff)
    return found[0] if found else None


def _env_file_warning(name: str, known: frozenset[str]) -> str | None:
    upper = name.upper()
    if upper in known or upper.startswith(_FOREIGN_PREFIXES) or not _NAME_RE.match(name):
        return None
    closest = closest_name(upper, known, ENV_FILE_CUTOFF)
    if closest is not None:
        return f"warning: .env: {upper} is not a setting of this bot; did you mean {closest}?"
    if upper.split("_", 1)[0] in _PREFIXES:
        return f"warning: .env: {upper} is not a setting of this bot; it is ignored"
    return None


def unknown_setting_warnings(
    env_file: Path = Path(".env"), environ: Mapping[str, str] | None = None
) -> list[str]:
    """One line per unknown name that looks like ours: those in `env_file` first, then the
    environment's clear misspellings. An unreadable `.env` gives none (the settings
    themselves report it)."""
    known = known_names()
    lines: list[str] = []
    seen: set[str] = set()
    try:
        names = list(DotEnvSettingsSource(Settings, env_file=env_file).env_vars)
    except (UnicodeDecodeError, OSError):
        names = []
    for name in names:
        seen.add(name.upper())
        line = _env_file_warning(name, known)
        if line is not None:
            lines.append(line)
    for name in sorted(environ or {}):
        upper = name.upper()
        if upper in known or upper in seen or not _NAME_RE.match(name):
            continue
        closest = closest_name(upper, known, ENVIRONMENT_CUTOFF)
        if closest is not None and upper.split("_", 1)[0] == closest.split("_", 1)[0]:
            lines.append(
                f"warning: environment: {name} is not a setting of this bot; "
                f"did you mean {closest}?"
            )
    return lines
