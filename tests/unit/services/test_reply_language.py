"""The answer's language follows the customer's: the loop asks once more, drafts wait.

Scripted models play the small local model that answers a Russian customer in English
(the instruction and tool descriptions are English); the customer must never see the
English answer, not even as a draft, and a Russian answer full of Latin product names,
order numbers and links is left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from services.answer_stream import DraftRelay
from services.llm.types import LLMResponse, Message, StepListener, ToolChoice
from services.loop import BoundedToolLoop
from services.loop_types import StopReason
from services.reply_language import customer_language, in_other_language, language_of, note
from storage.database import open_database
from tests.doubles import ScriptedLLM, text_response, tool_call, tool_calls_response
from tests.unit.services.loop_helpers import FakeTools, context
from tests.unit.services.test_chat import FakeLoop, _service

PROMPT = "support_chat@4"
RUSSIAN_QUESTION: list[Message] = [
    {"role": "system", "content": "You are a support assistant. Use the tools."},
    {"role": "user", "content": "Где мой заказ 8041?"},
]
ENGLISH = "Your order 8041 is in transit. It will arrive within 2 days."
RUSSIAN = "Ваш заказ 8041 в пути, он приедет в течение 2 дней."
LATIN_HEAVY = (
    "Есть наушники Sony WH-1000XM4 за 25 990 ₽ и Apple AirPods Pro 2 за 19 990 ₽, "
    "а также JBL Tune 760NC: https://shop.example/catalog/headphones?brand=Sony&sort=price "
    "и [страница товара](https://shop.example/p/airpods-pro-2). Order #8041, SKU JBL-760NC."
)


class StreamingLLM(ScriptedLLM):
    """The scripted model, streamed: each answer reaches the listener word by word."""

    async def stream_complete(
        self, messages: Sequence[Message], *, listener: StepListener, **options: Any
    ) -> LLMResponse:
        response = await self.complete(messages, **options)
        if response.tool_calls:
            listener.on_tool_call()
            return response
        so_far = ""
        for word in (response.text or "").split(" "):
            so_far = f"{so_far} {word}" if so_far else word
            listener.on_text(so_far)
        return response


class Screen:
    """The customer's screen: every draft shown, in order."""

    def __init__(self) -> None:
        self.drafts: list[str] = []

    def show(self, text: str) -> None:
        self.drafts.append(text)

    def thinking(self) -> None:
        self.drafts.append("…")


def make_loop(llm: ScriptedLLM, **kwargs: Any) -> BoundedToolLoop:
    tools = FakeTools()
    return BoundedToolLoop(llm, tools.registry, tools.executor, **kwargs)


def english_until_told(messages: list[Message], tool_choice: ToolChoice | None) -> LLMResponse:
    """Answers in English until the language note is the last message."""
    if messages[-1]["content"] == note("ru"):
        return text_response(RUSSIAN, usage=(30, 12))
    return text_response(ENGLISH, usage=(20, 10))


# ---------------------------------------------------------------- telling languages


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (RUSSIAN, "ru"),
        (ENGLISH, "en"),
        (LATIN_HEAVY, "ru"),
        ("Здравствуйте! Чем могу помочь?", "ru"),
        ("Hello! How can I help you?", "en"),
        ("Заказ 8041: In transit", None),  # one word each: nothing to enforce
        ("您的订单正在运输中", "other"),
        ("8041", None),
    ],
)
def test_the_words_that_carry_a_language_decide_it(text: str, language: str | None) -> None:
    assert language_of(text) == language


def test_the_customers_language_is_their_words_else_the_chats_when_they_have_none() -> None:
    assert customer_language("Где мой заказ?", fallback="en") == "ru"
    assert customer_language("Where is my order?", fallback="ru") == "en"
    assert customer_language("8041", fallback="ru") == "ru"  # only a number: the chat's
    assert customer_language("👍", fallback="en") == "en"
    assert customer_language("Wo ist meine Bestellung?", fallback="ru") is None  # unknown
    assert customer_language("8041", fallback=None) is None


def test_latin_names_links_and_numbers_in_a_russian_answer_are_not_another_language() -> None:
    assert not in_other_language(LATIN_HEAVY, "ru")
    assert in_other_language(ENGLISH, "ru") and in_other_language(RUSSIAN, "en")


# ---------------------------------------------------------------- the loop asks once more


async def test_an_english_answer_to_a_russian_question_is_asked_again_and_russian_delivered() -> (
    None
):
    llm = ScriptedLLM(english_until_told)
    result = await make_loop(llm).run(RUSSIAN_QUESTION, context(), prompt_ref=PROMPT, language="ru")

    assert result.text == RUSSIAN and result.stop_reason is StopReason.COMPLETED
    _first, retry = llm.chat_requests
    # the stable prefix is unchanged; the first answer and the note come after it
    assert retry.messages[: len(RUSSIAN_QUESTION)] == RUSSIAN_QUESTION
    assert retry.messages[-2] == {"role": "assistant", "content": ENGLISH}
    assert retry.messages[-1] == {"role": "system", "content": note("ru")}
    assert "Reply in Russian: the customer writes in Russian." in note("ru")
    assert retry.tool_choice == "none"  # a rewrite, not another round of tools
    # counted like any call: one more step, its tokens in the usage, its record
    assert result.trace.language_retries == 1 and result.model_steps == 2
    assert (result.trace.prompt_tokens, result.trace.completion_tokens) == (50, 22)
    assert len(result.trace.model_calls) == 2


async def test_the_retry_comes_after_the_tool_steps_and_even_beyond_the_step_limit() -> None:
    def script(messages: list[Message], tool_choice: ToolChoice | None) -> LLMResponse:
        if messages[-1]["role"] == "user":
            return tool_calls_response(tool_call("lookup", {"key": "8041"}))
        return english_until_told(messages, tool_choice)

    llm = ScriptedLLM(script)
    result = await make_loop(llm, max_steps=2).run(
        RUSSIAN_QUESTION, context(), prompt_ref=PROMPT, language="ru"
    )

    assert result.text == RUSSIAN and result.tool_names == ["lookup"]
    assert len(llm.chat_requests) == 3  # the limit's two steps and the one retry


async def test_a_russian_answer_full_of_latin_names_and_links_is_not_asked_again() -> None:
    llm = ScriptedLLM.from_responses(text_response(LATIN_HEAVY))
    result = await make_loop(llm).run(RUSSIAN_QUESTION, context(), prompt_ref=PROMPT, language="ru")

    assert result.text == LATIN_HEAVY and result.trace.language_retries == 0
    assert len(llm.chat_requests) == 1


async def test_a_model_that_insists_is_asked_once_and_the_better_answer_delivered() -> None:
    llm = ScriptedLLM(lambda messages, tool_choice: text_response(ENGLISH))
    result = await make_loop(llm).run(RUSSIAN_QUESTION, context(), prompt_ref=PROMPT, language="ru")

    assert len(llm.chat_requests) == 2 and result.trace.language_retries == 1
    assert result.text == ENGLISH  # nothing better came: the first answer, not silence


async def test_a_half_russian_retry_is_better_than_the_english_answer() -> None:
    half = "Ваш заказ 8041 is in transit and it will arrive within 2 days."
    llm = ScriptedLLM.from_responses(text_response(ENGLISH), text_response(half))
    result = await make_loop(llm).run(RUSSIAN_QUESTION, context(), prompt_ref=PROMPT, language="ru")

    assert result.text == half  # still not Russian, but more of it is


async def test_a_failed_retry_delivers_the_first_answer() -> None:
    llm = ScriptedLLM.from_responses(
        text_response(ENGLISH), text_response('{"name": "lookup", "arguments": {"key": "x"}}')
    )
    result = await make_loop(llm).run(RUSSIAN_QUESTION, context(), prompt_ref=PROMPT, language="ru")
    assert result.text == ENGLISH and result.stop_reason is StopReason.COMPLETED


async def test_without_a_language_nothing_is_asked_again() -> None:
    llm = ScriptedLLM.from_responses(text_response(ENGLISH))
    result = await make_loop(llm).run(RUSSIAN_QUESTION, context(), prompt_ref=PROMPT)
    assert result.text == ENGLISH and len(llm.chat_requests) == 1


# ---------------------------------------------------------------- drafts


async def test_the_customer_never_sees_the_english_answer_not_even_as_a_draft() -> None:
    screen = Screen()
    relay = DraftRelay(screen, leaks=lambda text: False, interval_s=0.0, language="ru")
    llm = StreamingLLM(english_until_told)
    result = await make_loop(llm).run(
        RUSSIAN_QUESTION, context(), prompt_ref=PROMPT, listener=relay, language="ru"
    )

    assert result.text == RUSSIAN
    shown = [draft for draft in screen.drafts if draft != "…"]
    assert shown and all(not in_other_language(draft, "ru") for draft in shown)
    assert not any("transit" in draft for draft in screen.drafts)
    assert shown[-1] == RUSSIAN


async def test_a_russian_draft_waits_only_for_its_first_words() -> None:
    screen = Screen()
    relay = DraftRelay(screen, leaks=lambda text: False, interval_s=0.0, language="ru")
    for text in (
        "Ваш",
        "Ваш заказ",
        "Ваш заказ 8041",
        "Ваш заказ 8041 в",
        "Ваш заказ 8041 в пути.",
    ):
        relay.on_text(text)
    assert screen.drafts == ["Ваш заказ 8041 в", "Ваш заказ 8041 в пути."]


# ---------------------------------------------------------------- the setting


async def test_the_chat_service_passes_the_customers_language_and_none_when_off(
    tmp_path: Path,
) -> None:
    db = await open_database(tmp_path / "bot.sqlite3")
    try:
        loop = FakeLoop()
        service, _ = _service(db, loop)
        caller = context().caller
        await service.answer(caller, "Где мой заказ?", language="en")
        await service.answer(caller, "8041", language="en")
        await service.answer(caller, "Where is my order?", language="ru")
        service._reply_language_check = False  # REPLY_LANGUAGE_CHECK=false
        await service.answer(caller, "Где мой заказ?", language="ru")
        await service.wait_for_summaries()
        assert loop.languages == ["ru", "en", "en", None]
    finally:
        await db.close()


async def test_the_turn_delivers_and_remembers_only_the_answer_in_the_customers_language(
    tmp_path: Path,
) -> None:
    db = await open_database(tmp_path / "bot.sqlite3")
    try:
        llm = ScriptedLLM(english_until_told)
        service, _ = _service(db, make_loop(llm))  # type: ignore[arg-type]
        caller = context().caller
        reply = await service.answer(caller, "Где мой заказ 8041?", language="ru")
        await service.answer(caller, "Спасибо!", language="ru")
        await service.wait_for_summaries()

        assert reply.text == RUSSIAN
        # the next turn's history holds the Russian answer; the English one is nowhere
        later = llm.chat_requests[2].messages  # the second turn's first request
        assert later[-1] == {"role": "user", "content": "Спасибо!"}
        assert {"role": "assistant", "content": RUSSIAN} in later
        assert not any(ENGLISH in str(m["content"]) for m in later if m["role"] != "system")
    finally:
        await db.close()


@pytest.mark.parametrize(
    "retry",
    [
        "Конечно, я понимаю. Вы написали в русском языке. Пожалуйста, повторите ваш ответ.",
        'Конечно, вот ваше сообщение: "Где мой заказ 8041?"',
        "Конечно, я понимаю. Введите ваш запрос в Russian.",
    ],
)
async def test_a_retry_that_talks_about_the_note_or_repeats_the_question_is_no_answer(
    retry: str,
) -> None:
    llm = ScriptedLLM.from_responses(text_response(ENGLISH), text_response(retry))
    result = await make_loop(llm).run(RUSSIAN_QUESTION, context(), prompt_ref=PROMPT, language="ru")
    assert result.text == ENGLISH  # the model's real answer, not its words about the note
