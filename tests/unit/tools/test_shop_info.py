"""get_shop_info: the demo FAQ by topic, alias or question words; an honest, structured miss;
and the scripted-LLM loop around it (one call, the answer from its data, an audit row)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from services.llm.types import Message, ToolChoice
from services.loop import BoundedToolLoop
from storage.records import AuditStatus
from storage.shop import FaqRecord, ShopRepository
from tests.doubles import ScriptedLLM, text_response, tool_call, tool_calls_response
from tools.base import ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.shop.demo import DEMO_FAQ
from tools.shop.faq import faq_key, question_keys
from tools.shop_info import MAX_ENTRIES, MAX_KNOWN_TOPICS

DELIVERY = next(entry.answer for entry in DEMO_FAQ if entry.topic == "Доставка")
CONTACTS = next(entry.answer for entry in DEMO_FAQ if entry.topic == "Контакты")


async def ask(context: ToolContext, topic: str) -> dict[str, object]:
    executor = ToolExecutor(build_registry())
    call = ToolCall("c", "get_shop_info", json.dumps({"topic": topic}, ensure_ascii=False))
    return json.loads((await executor.execute(call, context)).content)


def topics_of(body: dict[str, object]) -> list[str]:
    data = body["data"]
    assert isinstance(data, dict)
    return [entry["topic"] for entry in data["entries"]]


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("доставка", ["Доставка"]),
        ("  ДОСТАВКА ", ["Доставка"]),
        ("Сколько стоит доставка?", ["Доставка"]),
        ("стоимость доставки", ["Доставка"]),
        ("delivery", ["Доставка"]),
        ("Shipping cost", ["Доставка"]),
        ("оплата", ["Оплата"]),
        ("Можно оплатить картой?", ["Оплата"]),
        ("payment methods", ["Оплата"]),
        ("контакты", ["Контакты"]),
        ("Как с вами связаться?", ["Контакты"]),
        ("E-mail", ["Контакты"]),
        ("доставка и оплата", ["Доставка", "Оплата"]),
        ("payment and delivery", ["Оплата", "Доставка"]),  # in the order of the question
    ],
)
async def test_found_by_topic_alias_or_the_words_of_a_question(
    context_for: Callable[..., ToolContext], topic: str, expected: list[str]
) -> None:
    body = await ask(context_for(), topic)
    assert body["ok"] is True
    data = body["data"]
    assert isinstance(data, dict) and data["found"] is True
    assert topics_of(body) == expected
    assert "contacts" not in data and "known_topics" not in data


async def test_the_answer_is_the_shops_text_word_for_word(
    context_for: Callable[..., ToolContext],
) -> None:
    body = await ask(context_for(), "Сколько стоит доставка?")
    assert body["data"]["entries"] == [{"topic": "Доставка", "answer": DELIVERY}]  # type: ignore[index]


@pytest.mark.parametrize("topic", ["гарантия", "warranty", "доставщик", "оплатив", "контактный"])
async def test_a_miss_is_structured_with_the_contacts_and_the_known_topics(
    context_for: Callable[..., ToolContext], topic: str
) -> None:
    """No fuzzy guessing: other words or word forms the shop did not list are a miss."""
    body = await ask(context_for(), topic)
    assert body["ok"] is True
    data = body["data"]
    assert isinstance(data, dict)
    assert data["found"] is False and data["entries"] == []
    assert data["contacts"] == CONTACTS
    assert data["known_topics"] == ["Доставка", "Оплата", "Контакты"]
    assert "do not know" in data["message"] and "contacts" in data["message"]


async def test_without_a_contacts_entry_the_miss_has_no_contacts(
    shop: ShopRepository, context_for: Callable[..., ToolContext]
) -> None:
    topics = [f"Тема {n}" for n in range(30)]
    entries = [FaqRecord(key=faq_key(topic), topic=topic, answer="-") for topic in topics]
    await shop.import_shop_data(orders=[], policies=[], texts={}, faq=entries)
    data = (await ask(context_for(), "контакты"))["data"]
    assert isinstance(data, dict)
    assert data["found"] is False and "contacts" not in data
    assert data["known_topics"] == [f"Тема {n}" for n in range(MAX_KNOWN_TOPICS)]  # capped
    assert "contacts" not in data["message"]


async def test_an_exact_topic_wins_and_word_matches_are_capped(
    shop: ShopRepository, context_for: Callable[..., ToolContext]
) -> None:
    words = ["доставка", "оплата", "возврат", "гарантия", "самовывоз"]
    entries = [FaqRecord(key=w, topic=w.title(), answer=w) for w in words]
    entries.append(FaqRecord(key="доставка оплата", topic="Доставка оплата", answer="both"))
    await shop.import_shop_data(orders=[], policies=[], texts={}, faq=entries)
    assert topics_of(await ask(context_for(), "Доставка, оплата!")) == ["Доставка оплата"]
    many = await ask(context_for(), "гарантия самовывоз возврат доставка")
    assert topics_of(many) == ["Гарантия", "Самовывоз", "Возврат"][:MAX_ENTRIES]


async def test_anyone_may_ask_in_any_chat(context_for: Callable[..., ToolContext]) -> None:
    group = context_for(user_id=5, chat_id=-100)
    assert topics_of(await ask(group, "доставка")) == ["Доставка"]
    on_behalf = context_for(user_id=-100, chat_id=-100, sender_is_chat=True)
    assert topics_of(await ask(on_behalf, "оплата")) == ["Оплата"]


@pytest.mark.parametrize("topic", ["a", " ?  ", "x" * 101])
async def test_topic_length_is_enforced_on_the_host(
    context_for: Callable[..., ToolContext], topic: str
) -> None:
    body = await ask(context_for(), topic)
    assert body["ok"] is False
    assert body["error"]["code"] == "invalid_arguments"  # type: ignore[index]


async def test_a_topic_without_words_is_a_miss_not_an_error(
    context_for: Callable[..., ToolContext],
) -> None:
    assert (await ask(context_for(), "?!"))["data"]["found"] is False  # type: ignore[index]


def test_question_keys_are_word_runs_whole_question_first() -> None:
    assert question_keys("Сколько стоит доставка?") == [
        "сколько стоит доставка",
        "сколько стоит",
        "сколько",
        "стоит доставка",
        "стоит",
        "доставка",
    ]
    assert question_keys("?!") == []
    assert len(question_keys("слово " * 50)) == 9  # the whole question, runs of 1 to 8 words
    longest = question_keys(" ".join(f"w{n}" for n in range(50)))
    assert len(longest) == 1 + 8 * 50 - 28  # bounded: runs of at most 8 words
    assert faq_key("  Ёмкость E-mail! ") == "емкость e mail"


def test_demo_faq_is_stored_as_keys() -> None:
    assert [entry.topic for entry in DEMO_FAQ] == ["Доставка", "Оплата", "Контакты"]
    for entry in DEMO_FAQ:
        assert entry.key == faq_key(entry.topic)
        assert all(alias == faq_key(alias) for alias in entry.aliases)
        assert {"delivery", "payment", "contacts"} & set(entry.aliases)  # English aliases


# ------------------------------------------------------------------ the scripted-LLM loop


async def test_scripted_model_asks_once_and_answers_from_the_data(
    context_for: Callable[..., ToolContext],
) -> None:
    def model(messages: list[Message], choice: ToolChoice | None):
        if messages[-1]["role"] != "tool":
            return tool_calls_response(
                tool_call("get_shop_info", {"topic": "доставка"}, id="call_info")
            )
        result = json.loads(str(messages[-1]["content"]))
        [entry] = result["data"]["entries"]
        return text_response(f"{entry['topic']}: {entry['answer']}")

    llm = ScriptedLLM(model)
    registry = build_registry()
    loop = BoundedToolLoop(llm, registry, ToolExecutor(registry))
    messages: list[Message] = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "Сколько стоит доставка?"},
    ]
    result = await loop.run(messages, context_for(), prompt_ref="support_chat@1")

    assert result.tool_names == ["get_shop_info"]
    assert result.text == f"Доставка: {DELIVERY}"
    [audit] = result.trace.audit_records
    assert (audit.tool_name, audit.status, audit.call_id) == (
        "get_shop_info",
        AuditStatus.SUCCESS,
        "call_info",
    )
    offered = [tool["function"]["name"] for tool in llm.requests[0].tools or []]
    assert "get_shop_info" in offered
