"""The README is the owner's path, and it must keep working as the code moves: short, with
a table of contents; every relative link and `#anchor` (in the README and in docs/) leads
to a file and a heading that exist; every `./support-bot …` command line it shows parses
with the bot's own command line (and each command's `--help` runs); every `make` target
it names exists; every setting it names is one the bot reads; no internal issue number.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.programs.cli import _parse_args
from bot.runtime.config import Settings
from tests.waits import OUTER_LIMIT_S

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MARKDOWN = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 700

# names in capitals the README shows that are not the bot's settings: Docker Compose's own
# variables (compose.yaml, compose.instances.yaml) and words that happen to be capitals
NOT_SETTINGS = {
    "ADMIN_ID",  # the README's example of a mistyped name (ADMIN_IDS)
    "BOT_DOMAIN",
    "POSTGRES_PASSWORD",
    "HTTPS",
    "HTTP",
    "JSON",
    "TOML",
    "YAML",
    "FAQ",
    "GET",
    "POST",
    "SIGTERM",
    "SIGKILL",
    "PNG",
    "UTC",
    "USD",
    "RUB",
    "EUR",
    "ISO",
    "API",
    "URL",
    "CPU",
    "LLM",
    "AI",
    "README",
    "OK",
    "MB",
    "KB",
    "PRAGMA",
    "VACUUM",
    "ANALYZE",
    "E164",
}


def _without_code(text: str) -> str:
    """The text outside fenced code blocks (a `# comment` there is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its words
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in _without_code(path.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"^#{1,6} +(.+?) *#*$", line)
        if heading is None:
            continue
        anchor = github_anchor(heading.group(1))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def links(path: Path) -> Iterator[str]:
    text = _without_code(path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans hold no links
    yield from re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)


def code_blocks(path: Path) -> list[str]:
    return re.findall(r"^```[a-z ]*\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


# --- the shape ------------------------------------------------------------------------


def test_the_readme_is_short_with_a_table_of_contents() -> None:
    text = readme_text()
    assert len(text.splitlines()) <= MAX_README_LINES
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"\]\(#([^)]+)\)", contents))
    sections = {
        github_anchor(h)
        for h in re.findall(r"^## +(.+)$", _without_code(text), flags=re.M)
        if h != "Contents"
    }
    assert sections <= listed, f"sections missing from the contents: {sections - listed}"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.name)
def test_no_internal_issue_numbers(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = re.findall(r"\bissues?\s*\(?#?\d+|\blater issue\b", text, flags=re.I)
    assert not found, f"{path.name}: {found}"


# --- links and anchors ------------------------------------------------------------------


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(path: Path) -> None:
    broken = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading in {linked.name}")
    assert not broken, f"{path.name}: " + "; ".join(broken)


# --- commands ---------------------------------------------------------------------------


def support_bot_commands() -> list[str]:
    """Every `./support-bot …` command line of the README's shell blocks."""
    commands = []
    for block in code_blocks(README):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("./support-bot"):
                commands.append(line)
    return commands


def test_the_readme_calls_the_commands_one_way() -> None:
    text = readme_text()
    assert support_bot_commands()
    for old in (".venv/bin/support-bot", ".venv/bin/python -m bot", "python -m bot "):
        assert old not in text, f"the README still shows {old!r}: use ./support-bot"
    assert not re.search(r"^\s*support-bot ", text, flags=re.M)


@pytest.mark.parametrize("command", support_bot_commands())
def test_each_readme_command_line_parses(command: str) -> None:
    """What an owner copies is a valid command line of the bot's own parser."""
    argv = shlex.split(command)[1:]
    if "--help" in argv:  # shown by the next test
        return
    _parse_args(argv)  # exits (status 2) on an unknown command or option


def test_each_readme_command_shows_its_help() -> None:
    names = {shlex.split(c)[1] for c in support_bot_commands() if len(shlex.split(c)) > 1}
    names = {n for n in names if not n.startswith("-")}
    assert {"import-data", "simulate", "texts"} <= names
    for name in sorted(names):
        shown = subprocess.run(
            [sys.executable, "-m", "bot", name, "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=OUTER_LIMIT_S,
            check=False,
        )
        assert shown.returncode == 0 and "usage:" in shown.stdout, (name, shown.stderr)


def test_each_make_target_the_readme_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, flags=re.M))
    named = set(re.findall(r"`make ([a-z][a-z-]*)", readme_text()))
    for block in code_blocks(README):
        named |= set(re.findall(r"^make ([a-z][a-z-]*)", block, flags=re.M))
    assert named and named <= targets, named - targets


# --- settings ---------------------------------------------------------------------------


def test_every_setting_the_readme_names_is_read_by_the_bot() -> None:
    text = readme_text()
    names = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})(?:=[^`]*)?`", text))
    for block in code_blocks(README):
        names |= set(re.findall(r"^\s*#?\s*([A-Z][A-Z0-9_]{2,})=", block, flags=re.M))
        names |= set(re.findall(r"#\s+([A-Z][A-Z0-9_]{2,})=", block))
    from bot.telegram.features.registry import FEATURES  # the features' settings groups

    known = {*Settings.model_fields, *(f for s in FEATURES for f in s.settings.model_fields)}
    unknown = {n for n in names - NOT_SETTINGS if n.lower() not in known}
    assert not unknown, f"the README names settings the bot does not read: {sorted(unknown)}"
