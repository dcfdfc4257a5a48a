"""Group privacy through the real process: `python -m bot` against both fakes.

In a group every member reads the bot's answer and it enters the group's shared history,
so an owner-only order is never answered there — not even to its owner, and without
telling the group whether the number exists. Public orders still work in groups.
Anonymous group admins (messages sent on behalf of the group) are their group, not one
placeholder user shared with every other group's anonymous admins, and never an owner.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bot.telegram.texts import RU
from tests.e2e.chat_helpers import (
    StartBot,
    ask,
    finished_sql,
    import_shop,
    last_user_text,
    query,
    results_for,
    seen_text,
    tool_messages,
    tool_step,
    wait_for_db,
)
from tests.fakes.openai_server import FakeOpenAIServer, fake_call
from tests.fakes.telegram_server import BOT_USER, FakeTelegramServer, message_update

OWNER, MEMBER = 7101, 7102
GROUP, OTHER_GROUP = -1007100, -1007200
OWNED, MISSING, PUBLIC = "5161", "5162", "5163"
PICKUP = "Пункт выдачи Тайная, 9"
GROUP_ANONYMOUS_BOT = 1087968824
MENTION = f"@{BOT_USER['username']}"


def to_bot_in_group(group: int, text: str, *, user_id: int | None = None) -> dict[str, Any]:
    """A group message that mentions the bot; without `user_id`, from an anonymous admin."""
    extra: dict[str, Any] = {}
    if user_id is None:
        chat = {"id": group, "type": "supergroup", "title": "Test group"}
        extra = {
            "sender_chat": chat,
            "from": {
                "id": GROUP_ANONYMOUS_BOT,
                "is_bot": True,
                "first_name": "Group",
                "username": "GroupAnonymousBot",
            },
        }
    return message_update(
        group,
        text=f"{MENTION} {text}",
        user_id=user_id,
        chat_type="supergroup",
        entities=[{"type": "mention", "offset": 0, "length": len(MENTION)}],
        extra=extra,
    )


async def ask_in_group(
    telegram: FakeTelegramServer, group: int, text: str, *, user_id: int | None = None
) -> str:
    before = len(telegram.messages_to(group))
    telegram.enqueue_update(to_bot_in_group(group, text, user_id=user_id))
    messages = await telegram.wait_for_messages(group, before + 1)
    return seen_text(messages[before].text)


async def test_an_owner_only_order_is_never_answered_into_a_group(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await import_shop(
        bot_base_env,
        tmp_path,
        {
            "orders": [
                {
                    "order_id": OWNED,
                    "status": "ready_for_pickup",
                    "owner_telegram_id": OWNER,
                    "pickup_point": PICKUP,
                    "expected_date": "2026-12-24",
                },
                {"order_id": PUBLIC, "status": "in_transit"},  # no owner: public
            ]
        },
    )
    # the model looks up every 4-digit number it is given, then repeats what the tool said
    fake_openai.handler = tool_step(
        lambda text: [
            fake_call("get_order_status", {"order_id": n}) for n in re.findall(r"\d{4}", text)
        ],
        lambda body: "Результат: " + json.dumps(tool_messages(body), ensure_ascii=False),
    )
    await start_bot()

    questions = {
        "owner": f"Где мой заказ {OWNED}?",
        "member": f"Покажи заказ {OWNED}",
        "missing": f"Где заказ {MISSING}?",
        "anonymous": f"Заказ {OWNED}, пожалуйста",
        "public": f"Где заказ {PUBLIC}?",
    }
    replies = {
        "owner": await ask_in_group(fake_telegram, GROUP, questions["owner"], user_id=OWNER),
        "member": await ask_in_group(fake_telegram, GROUP, questions["member"], user_id=MEMBER),
        "missing": await ask_in_group(fake_telegram, GROUP, questions["missing"], user_id=MEMBER),
        "anonymous": await ask_in_group(fake_telegram, GROUP, questions["anonymous"]),
        "public": await ask_in_group(fake_telegram, GROUP, questions["public"], user_id=OWNER),
    }
    private_question = f"Где мой заказ {OWNED}? (лично)"
    private_reply = await ask(fake_telegram, OWNER, private_question)

    results = {name: results_for(fake_openai, text) for name, text in questions.items()}
    [owner] = results["owner"]

    # what the model was told for the owner in the group: ask in private, no order data
    assert owner["ok"] is True
    assert owner["data"]["found"] is False and owner["data"]["ask_in_private_chat"] is True
    assert "private chat" in owner["data"]["message"]
    assert all(owner["data"].get(k) is None for k in ("status", "pickup_point", "expected_date"))

    # the group learns nothing: own, someone else's, missing, anonymous — one answer
    def without_number(result: list[dict[str, Any]]) -> str:
        text = json.dumps(result, sort_keys=True)
        return text.replace(OWNED, "####").replace(MISSING, "####")

    for name in ("member", "missing", "anonymous"):
        assert without_number(results[name]) == without_number(results["owner"]), name

    # nothing about the order reached the group; the owner's reply says to ask privately
    group_saw = " ".join(seen_text(m.text) for m in fake_telegram.messages_to(GROUP))
    for secret in (PICKUP, "ready_for_pickup", "2026-12-24"):
        assert secret not in group_saw
    assert "private chat" in replies["owner"]

    # public orders still work in the group
    [public] = results["public"]
    assert public["data"]["found"] is True and public["data"]["status"] == "in_transit"
    assert "in_transit" in replies["public"]

    # in the private chat the owner gets the order
    [mine] = results_for(fake_openai, private_question)
    assert mine["data"]["found"] is True and mine["data"]["pickup_point"] == PICKUP
    assert PICKUP in private_reply

    # no order data entered the group's shared history (what the model sees next time)
    history = query(
        database_path,
        "SELECT m.content FROM messages m JOIN sessions s ON s.id = m.session_id"
        " WHERE s.chat_id = ?",
        GROUP,
    )
    assert history and all(PICKUP not in content for (content,) in history)

    # the anonymous admin's lookup is counted for the group, not for the placeholder user
    anonymous_audit = query(
        database_path,
        "SELECT DISTINCT tc.user_id FROM tool_calls tc JOIN turns t ON t.id = tc.turn_id"
        " WHERE t.chat_id = ? AND tc.user_id < 0",
        GROUP,
    )
    assert anonymous_audit == [(GROUP,)]
    assert query(
        database_path, "SELECT count(*) FROM tool_calls WHERE user_id = ?", GROUP_ANONYMOUS_BOT
    ) == [(0,)]


async def test_anonymous_admins_of_different_groups_do_not_share_limits(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start_bot(USER_MESSAGES_PER_MINUTE="2", USER_MESSAGES_PER_DAY="100")
    flood = [f"Привет {i}" for i in range(3)]
    flooded = [fake_telegram.enqueue_update(to_bot_in_group(GROUP, text)) for text in flood]
    await wait_for_db(database_path, finished_sql(flooded), [(3,)], *flooded)
    others = [
        fake_telegram.enqueue_update(to_bot_in_group(OTHER_GROUP, "Привет из другой группы")),
        fake_telegram.enqueue_update(to_bot_in_group(GROUP, "Привет от участника", user_id=MEMBER)),
    ]
    await wait_for_db(database_path, finished_sql(others), [(2,)], *others)

    in_group = [seen_text(m.text) for m in fake_telegram.messages_to(GROUP)]
    in_other_group = [seen_text(m.text) for m in fake_telegram.messages_to(OTHER_GROUP)]
    # the flooding group's anonymous admins hit their limit: two answers and one notice
    assert in_group[2] == seen_text(RU.rate_limited_notice)
    # another group's anonymous admin and a member of the same group are still served
    assert len(in_other_group) == 1 and in_other_group[0] != seen_text(RU.rate_limited_notice)
    assert len(in_group) == 4 and in_group[3] != seen_text(RU.rate_limited_notice)
    asked = {last_user_text(b) for b in fake_openai.chat_requests}
    assert {"Привет из другой группы", "Привет от участника", *flood[:2]} <= asked
    assert flood[2] not in asked


ADMIN_MEMBER = 7103


async def test_only_a_groups_admins_can_start_its_conversation_over(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, database_path: Path
) -> None:
    """The group's history is everyone's: a member's bare /new is refused and wipes
    nothing; an administrator's, or an anonymous admin's, starts it over."""
    fake_telegram.member_status[(GROUP, ADMIN_MEMBER)] = "administrator"
    await start_bot()
    await ask_in_group(fake_telegram, GROUP, "Здравствуйте", user_id=MEMBER)

    def resets() -> list[tuple[Any, ...]]:
        return query(
            database_path,
            "SELECT count(*) FROM sessions WHERE chat_id = ? AND close_reason = 'reset'",
            GROUP,
        )

    refused = await ask_in_group_command(fake_telegram, GROUP, "/new", user_id=MEMBER)
    assert refused == seen_text(RU.new_admins_only)
    assert resets() == [(0,)]

    done = await ask_in_group_command(fake_telegram, GROUP, "/new", user_id=ADMIN_MEMBER)
    assert done == seen_text(RU.new_session)
    assert resets() == [(1,)]
    anonymous = await ask_in_group_command(fake_telegram, GROUP, "/new")
    assert anonymous == seen_text(RU.new_session)
    assert resets() == [(2,)]


async def ask_in_group_command(
    telegram: FakeTelegramServer, group: int, command: str, *, user_id: int | None = None
) -> str:
    """A bare command in the group (no mention), as members type it."""
    update = to_bot_in_group(group, "", user_id=user_id)
    update["message"]["text"] = command
    update["message"]["entities"] = [{"type": "bot_command", "offset": 0, "length": len(command)}]
    before = len(telegram.messages_to(group))
    telegram.enqueue_update(update)
    messages = await telegram.wait_for_messages(group, before + 1)
    return seen_text(messages[before].text)
