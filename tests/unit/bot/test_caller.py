"""Who sent a message, from the update alone: a person, or a chat (anonymous admin, channel)."""

from __future__ import annotations

from typing import Any

from aiogram.types import Message

from bot.telegram.filters import (
    CHANNEL_BOT_ID,
    GROUP_ANONYMOUS_BOT_ID,
    FromUsers,
    caller_of,
)
from tools.base import Caller

GROUP, OTHER_GROUP, CHANNEL = -1001234, -1005678, -1009999


def message(chat_id: int, chat_type: str, from_id: int | None, **extra: Any) -> Message:
    data: dict[str, Any] = {
        "message_id": 1,
        "date": 0,
        "chat": {
            "id": chat_id,
            "type": chat_type,
            **({} if chat_type == "private" else {"title": "G"}),
        },
        "text": "hi",
        **extra,
    }
    if from_id is not None:
        data["from"] = {"id": from_id, "is_bot": from_id > 1_000_000_000, "first_name": "X"}
    return Message.model_validate(data)


def anonymous_admin(group: int) -> Message:
    return message(
        group,
        "supergroup",
        GROUP_ANONYMOUS_BOT_ID,
        sender_chat={"id": group, "type": "supergroup", "title": "G"},
    )


def test_a_person_in_their_private_chat() -> None:
    assert caller_of(message(42, "private", 42)) == Caller(
        key=42, chat_id=42, is_chat=False, private_chat=True
    )


def test_a_person_in_a_group() -> None:
    assert caller_of(message(GROUP, "group", 42)) == Caller(
        key=42, chat_id=GROUP, is_chat=False, private_chat=False
    )


def test_anonymous_admins_are_their_group_not_one_shared_placeholder() -> None:
    first, other = caller_of(anonymous_admin(GROUP)), caller_of(anonymous_admin(OTHER_GROUP))
    assert first == Caller(key=GROUP, chat_id=GROUP, is_chat=True, private_chat=False)
    assert other.key == OTHER_GROUP != first.key
    assert GROUP_ANONYMOUS_BOT_ID not in (first.key, other.key)


def test_a_message_on_behalf_of_a_channel_is_that_channel() -> None:
    posted = message(
        GROUP,
        "supergroup",
        CHANNEL_BOT_ID,
        sender_chat={"id": CHANNEL, "type": "channel", "title": "C"},
    )
    assert caller_of(posted) == Caller(key=CHANNEL, chat_id=GROUP, is_chat=True, private_chat=False)


def test_a_placeholder_sender_without_sender_chat_is_the_chat() -> None:
    assert caller_of(message(GROUP, "group", GROUP_ANONYMOUS_BOT_ID)) == Caller(
        key=GROUP, chat_id=GROUP, is_chat=True, private_chat=False
    )
    assert caller_of(message(GROUP, "group", None)).is_chat


async def test_admin_commands_need_a_person_not_a_placeholder() -> None:
    """Even with the placeholder id listed, an anonymous admin is nobody in particular."""
    admins = FromUsers(frozenset({42, GROUP_ANONYMOUS_BOT_ID, GROUP}))
    assert await admins(message(42, "private", 42))
    assert await admins(message(GROUP, "group", 42))
    assert not await admins(anonymous_admin(GROUP))
    assert not await admins(message(GROUP, "group", GROUP_ANONYMOUS_BOT_ID))
