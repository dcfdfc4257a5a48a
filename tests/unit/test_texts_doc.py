"""docs/texts.md's "Every key, by feature" is the truth: under the bot's own texts every
key of `Texts`, under each feature with words exactly its keys (the ones a shop's
TEXTS_FILE may reword) with the placeholders its wording must keep, and the staff's keys
marked as read in DEFAULT_LANGUAGE."""

from __future__ import annotations

import re
import string
from dataclasses import fields
from pathlib import Path

from bot.telegram.action_words import ACTION_STAFF_WORDS
from bot.telegram.features.registry import FEATURES
from bot.telegram.handoff_view import OPERATOR_WORDS
from bot.telegram.texts import TEXT_KEYS

DOC = Path(__file__).resolve().parents[2] / "docs" / "texts.md"
STAFF = "Staff (in `DEFAULT_LANGUAGE`):"


def sections() -> dict[str, str]:
    """The body of each `### … (`name`)` heading of the section, by name."""
    text = DOC.read_text(encoding="utf-8")
    _, section = text.split("## Every key, by feature", 1)
    found: dict[str, str] = {}
    for block in section.split("\n### ")[1:]:
        heading, _, body = block.partition("\n")
        named = re.search(r"\(`(\w+)`\)\s*$", heading)
        found["own" if named is None else named.group(1)] = body
    return found


def keys_in(body: str) -> set[str]:
    return set(re.findall(r"`(\w+)`", body.replace(STAFF, "")))


def own_placeholders(text: str) -> list[str]:
    names = {name for _, name, _, _ in string.Formatter().parse(text) if name}
    return sorted(names - {"shop_name", "contacts"})


def test_the_bots_own_texts_are_listed() -> None:
    assert keys_in(sections()["own"]) == set(TEXT_KEYS)


def test_every_feature_with_words_has_exactly_its_keys_and_placeholders() -> None:
    documented = sections()
    with_words = [spec for spec in FEATURES if spec.words]
    assert {spec.name for spec in with_words} <= set(documented)
    for spec in with_words:
        body = documented[spec.name]
        words = spec.words["en"]
        assert keys_in(body) == set(words), spec.name
        for key, text in words.items():
            placeholders = own_placeholders(text)
            if placeholders:
                shown = ", ".join(f"{{{name}}}" for name in placeholders)
                assert f"`{key}` ({shown})" in body, (spec.name, key)


def test_the_staffs_words_are_marked_as_read_in_the_shops_language() -> None:
    documented = sections()
    for name, table in (("actions", ACTION_STAFF_WORDS), ("handoff", OPERATOR_WORDS)):
        _, marked, staff = documented[name].partition(STAFF)
        assert marked, name
        staff_keys = {f.name for f in fields(table["en"])}
        assert keys_in(staff.split("\n\n", 1)[0]) == staff_keys, name
