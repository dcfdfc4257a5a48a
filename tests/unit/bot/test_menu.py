"""The commands menu: entries declared by the routers and features, words from the texts."""

from __future__ import annotations

import pytest

from bot.telegram.features import Feature
from bot.telegram.gaps_view import GAPS_WORDS
from bot.telegram.handoff_view import HANDOFF_WORDS
from bot.telegram.menu import feature_entry, menu_calls
from bot.telegram.routers import get_menu
from bot.telegram.routers.handoff import MENU as HANDOFF_MENU
from bot.telegram.texts import BUILT_IN, EN, RU, TextsError, build_text_table


def _menus(calls: list) -> list[tuple[object, str | None, list[tuple[str, str]]]]:
    return [
        (
            getattr(c.scope, "chat_id", None),
            c.language_code,
            [(b.command, b.description) for b in c.commands],
        )
        for c in calls
    ]


def test_customers_then_each_admin_in_the_default_language_then_english() -> None:
    calls = _menus(menu_calls(get_menu(), BUILT_IN, [42]))
    assert [(who, code) for who, code, _ in calls] == [
        (None, None),
        (42, None),
        (None, "en"),
        (42, "en"),
    ]
    customers = [("start", RU.menu_start), ("help", RU.menu_help), ("new", RU.menu_new)]
    customers += [("phone", RU.menu_phone), ("forget_phone", RU.menu_forget_phone)]
    assert calls[0][2] == customers
    assert calls[1][2] == [*customers, ("stats", RU.menu_stats)]
    assert calls[2][2][0] == ("start", EN.menu_start)


def test_a_features_entries_join_the_customers_menu() -> None:
    handoff = Feature(name="handoff", menu=HANDOFF_MENU)
    [everyone] = _menus(menu_calls(get_menu([handoff]), BUILT_IN, []))[:1]
    assert everyone[2][-1] == ("operator", HANDOFF_WORDS["ru"].menu_operator)


def test_a_features_admin_entries_join_only_the_admins_menu() -> None:
    gaps = Feature(name="gaps", admin_menu=(feature_entry("gaps", "menu_gaps", GAPS_WORDS),))
    table = build_text_table(features=GAPS_WORDS)
    everyone, admin = _menus(menu_calls(get_menu([gaps]), table, [42]))[:2]
    assert "gaps" not in [command for command, _ in everyone[2]]
    assert admin[2][-2:] == [("stats", RU.menu_stats), ("gaps", GAPS_WORDS["ru"]["menu_gaps"])]
    reworded = build_text_table(overrides={"en": {"menu_gaps": "Misses"}}, features=GAPS_WORDS)
    assert ("gaps", "Misses") in _menus(menu_calls(get_menu([gaps]), reworded, [42]))[3][2]


def test_a_shop_may_reword_the_menu_within_telegrams_limit() -> None:
    table = build_text_table(overrides={"en": {"menu_help": "What I can do"}})
    calls = _menus(menu_calls(get_menu(), table, []))
    assert ("help", "What I can do") in calls[1][2]
    with pytest.raises(TextsError, match=r"\[ru\] menu_new: a menu entry takes 1-256"):
        build_text_table(overrides={"ru": {"menu_new": "x" * 257}})
