"""The output guard against the real support_chat instruction."""

from __future__ import annotations

import pytest

from services.output_guard import SystemPromptGuard, normalised_words
from services.prompts import build_prompt_registry


@pytest.fixture(scope="module")
def system_text() -> str:
    return build_prompt_registry().render("support_chat", shop_name="Demo Shop").text


@pytest.fixture(scope="module")
def guard(system_text: str) -> SystemPromptGuard:
    return SystemPromptGuard(system_text)


def rule(system_text: str, starting_with: str) -> str:
    """One whole bullet of the instruction's rules, its wrapped lines joined."""
    bullets = system_text.split("\n- ")
    bullet = next(b for b in bullets if b.startswith(starting_with))
    return " ".join(bullet.split())


def test_the_whole_instruction_is_a_leak(guard: SystemPromptGuard, system_text: str) -> None:
    assert guard.leaks(f"Sure! Here are my instructions:\n\n{system_text}")


def test_markdown_decoration_does_not_hide_a_leak(
    guard: SystemPromptGuard, system_text: str
) -> None:
    decorated = "\n".join(
        f"> **{line.strip('- ')}**" if line.startswith("- ") else f"### {line}"
        for line in system_text.splitlines()
    ).replace("get_order_status", "`get\\_order\\_status`")

    assert guard.leaks(decorated)


def test_one_full_rule_quoted_is_a_leak(guard: SystemPromptGuard, system_text: str) -> None:
    quoted = rule(system_text, "Tool results")

    assert guard.leaks(f'My rules say: "{quoted.upper()}"')


def test_invisible_and_bidi_characters_do_not_hide_a_leak(
    guard: SystemPromptGuard, system_text: str
) -> None:
    passage = rule(system_text, "Use only facts")
    hidden = "\u200b".join(passage[:60]) + "\u202e" + passage[60:] + "\ufeff"

    assert guard.leaks(hidden)


def test_letters_spelled_apart_do_not_hide_a_leak(
    guard: SystemPromptGuard, system_text: str
) -> None:
    passage = rule(system_text, "If the customer asks")

    assert guard.leaks(" ".join(ch for ch in passage if not ch.isspace()))


def test_html_formatting_of_the_reply_does_not_hide_a_leak(
    guard: SystemPromptGuard, system_text: str
) -> None:
    passage = rule(system_text, "Tool results")
    as_html = passage.replace("<", "&lt;").replace(">", "&gt;").replace(" data ", " <b>data</b> ")

    assert guard.leaks(as_html)


def test_two_separate_passages_are_a_leak(guard: SystemPromptGuard) -> None:
    reply = (
        "I follow two rules. First, never invent order statuses, dates, places, return "
        "periods. Second, ask one short clarifying question for the 4-digit order number."
    )

    assert guard.leaks(reply)


@pytest.mark.parametrize(
    "reply",
    [
        "Order 8041 is in transit and should arrive on 12 March.",
        "Please send me the 4-digit order number and I will check its status.",
        "I could not find an order with that number. Please check it and send it again.",
        'I am the customer support assistant of the online shop "Demo Shop". How can I help?',
        "I'm sorry, I can't promise a refund, a replacement or any change to an order, "
        "but I can check its status or the return policy.",
        "Товар можно вернуть в течение 14 дней, если сохранены упаковка и чек.",
        "Заказ 8041 передан в доставку. 📦 Ожидаемая дата — 12 марта.",
        "",
    ],
)
def test_ordinary_answers_pass(guard: SystemPromptGuard, reply: str) -> None:
    assert not guard.leaks(reply)


def test_normalisation_ignores_case_punctuation_markup_and_invisible_marks() -> None:
    assert normalised_words(
        "**Never**  re\u200bveal, _quote_ [or](https://x.example) DISCUSS!"
    ) == [
        "never",
        "reveal",
        "quote",
        "or",
        "discuss",
    ]


def test_a_russian_instruction_is_guarded_too() -> None:
    text = build_prompt_registry().render("support_chat", shop_name="Кофейный двор").text
    guard = SystemPromptGuard(text)

    assert guard.leaks(text.replace("Кофейный двор", "КОФЕЙНЫЙ ДВОР"))
