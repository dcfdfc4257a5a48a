"""The shop FAQ through the real process: `python -m bot` against both fakes, the fake model
running its keyword script (delivery/payment/contact/warranty questions → get_shop_info).

"Сколько стоит доставка?" gets one get_shop_info call and the shop's own answer; a topic
the shop has no entry for gets an honest "I don't know" with the shop's contacts; a FAQ
imported with `import-data` replaces the demo one; the calls are audited and in /stats.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.chat_helpers import StartBot, ask, import_shop, query, results_for, wait_for_db
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer

# the demo FAQ (tools/shop/demo.py), written out so that this file also runs on code
# without it
DEMO = {
    "Доставка": (
        "Курьером по городу — 300 ₽, бесплатно при заказе от 5000 ₽; срок — 1–3 рабочих "
        "дня. Самовывоз из пункта выдачи — бесплатно, на следующий день после оформления."
    ),
    "Контакты": (
        "Телефон: +7 000 000-00-00 (ежедневно с 9:00 до 21:00), e-mail: support@example.com."
    ),
}
ADMIN = 900


async def test_delivery_question_and_an_unknown_topic_with_the_demo_faq(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    database_path: Path,
) -> None:
    await start_bot(ADMIN_IDS=str(ADMIN))

    question = "Сколько стоит доставка?"
    reply = await ask(fake_telegram, 701, question)
    [result] = results_for(fake_openai, question)  # one call, and it found the entry
    assert result["ok"] is True and result["data"]["found"] is True
    assert DEMO["Доставка"] in reply

    unknown = "Какая у вас гарантия на технику?"
    reply = await ask(fake_telegram, 702, unknown)
    [result] = results_for(fake_openai, unknown)
    assert result["data"]["found"] is False
    assert result["data"]["contacts"] == DEMO["Контакты"]
    assert "не знаю" in reply and DEMO["Контакты"] in reply

    english = "How much does delivery cost?"
    reply = await ask(fake_telegram, 703, english, language_code="en")
    assert DEMO["Доставка"] in reply and reply.startswith("According to the shop")

    await wait_for_db(
        database_path, "SELECT count(*) FROM turns WHERE chat_id IN (701, 702, 703)", [(3,)]
    )
    assert query(
        database_path, "SELECT chat_id, tool_name, status FROM tool_calls ORDER BY chat_id"
    ) == [
        (701, "get_shop_info", "success"),
        (702, "get_shop_info", "business_error"),  # the shop's data had no answer
        (703, "get_shop_info", "success"),
    ]
    stats = await ask(fake_telegram, ADMIN, "/stats", language_code="en")
    assert re.search(r"Shop info \(FAQ\)\s+calls\s+3\s+done\s+2\s+67%\s+said no\s+1\b", stats), (
        stats
    )


async def test_an_imported_faq_replaces_the_demo_one(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    tmp_path: Path,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
) -> None:
    own = "Доставка по Казани — 250 ₽, в день заказа."
    await import_shop(
        bot_base_env,
        tmp_path,
        {"faq": [{"topic": "Доставка", "answer": own, "aliases": ["delivery", "доставки"]}]},
    )
    await start_bot()  # SEED_DEMO_DATA is on, but the FAQ has the shop's own entry

    assert own in await ask(fake_telegram, 711, "Сколько стоит доставка?")
    assert DEMO["Доставка"] not in own

    # no contacts entry in this FAQ: the honest answer has no made-up contacts either
    question = "А как с вами связаться, какие контакты?"
    reply = await ask(fake_telegram, 712, question)
    [result] = results_for(fake_openai, question)
    assert result["data"]["found"] is False and "contacts" not in result["data"]
    assert result["data"]["known_topics"] == ["Доставка"]
    assert "не знаю" in reply and DEMO["Контакты"] not in reply
