"""Topic titles in the operators' group: how operators recognise a customer."""

from __future__ import annotations

from aiogram.types import User

from bot.telegram.handoff_view import topic_name


def test_a_name_with_bidi_overrides_and_controls_gives_a_clean_title() -> None:
    user = User(id=1, is_bot=False, first_name="\u202eanna\u202c\x07", last_name="\u2066P\u2069")
    assert topic_name(user, 1) == "anna P"


def test_a_name_made_only_of_controls_falls_back_to_the_chat_id() -> None:
    user = User(id=1, is_bot=False, first_name="\u202e\u202c\x00")
    assert topic_name(user, 7301) == "#7301"
