"""/help lists exactly the commands of the customers' menu, through the real process.

The menu (setMyCommands) and /help come from the same entries, so a feature's command
(/operator with OPERATOR_CHAT_ID) is in both when the feature is on and in neither when
it is off, in both languages.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import StartBot
from tests.fakes.telegram_server import FakeTelegramServer, message_update

pytestmark = pytest.mark.both_backends

CUSTOMER = 7501
OPERATORS = -1001600


def listed_commands(text: str) -> list[str]:
    """The commands /help lists, one a line ("- /command — words")."""
    return re.findall(r"^\W*/([a-z_]+) — ", text, flags=re.MULTILINE)


@pytest.mark.parametrize("handoff", [False, True], ids=["without_operators", "with_operators"])
async def test_help_lists_exactly_the_commands_of_the_menu(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, handoff: bool
) -> None:
    if handoff:
        fake_telegram.add_forum(OPERATORS)
        await start_bot(OPERATOR_CHAT_ID=str(OPERATORS))
    else:
        await start_bot()
    # the menu in the customers' scope, in the default language (no code) and in English
    await fake_telegram.wait_for_call(
        "setMyCommands",
        lambda c: "chat_id" not in c.params.get("scope", {}) and c.params.get("language_code"),
    )
    menus = {
        call.params.get("language_code"): [c["command"] for c in call.params["commands"]]
        for call in fake_telegram.calls_of("setMyCommands")
        if "chat_id" not in call.params.get("scope", {})
    }
    assert ("operator" in menus[None]) is handoff
    fake_telegram.enqueue_update(message_update(CUSTOMER, text="/help"))
    fake_telegram.enqueue_update(message_update(CUSTOMER, text="/help", language_code="en"))
    ru, en = await fake_telegram.wait_for_messages(CUSTOMER, 2)
    assert "Команды" in ru.plain_text and "Commands" in en.plain_text
    assert listed_commands(ru.plain_text) == menus[None]
    assert listed_commands(en.plain_text) == menus["en"]
