"""The output guard against the real support_chat instruction."""

from __future__ import annotations

import codecs
import sys
import unicodedata

import pytest

from services.output_guard import SystemPromptGuard, normalised_words, quotable_data
from services.prompts import build_prompt_registry
from services.text_visibility import has_visible_text


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
    passage = rule(system_text, "Use only facts")

    assert guard.leaks(" ".join(ch for ch in passage if not ch.isspace()))


def test_html_formatting_of_the_reply_does_not_hide_a_leak(
    guard: SystemPromptGuard, system_text: str
) -> None:
    passage = rule(system_text, "Tool results")
    as_html = passage.replace("<", "&lt;").replace(">", "&gt;").replace(" data ", " <b>data</b> ")

    assert guard.leaks(as_html)


def test_two_separate_passages_are_a_leak(guard: SystemPromptGuard) -> None:
    reply = (
        "I follow two rules. First, I use only facts from this conversation and from tool "
        "results. Second, I reply briefly and politely in the language of the customer's "
        "last message."
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


# ------------------------------------------------------------------ cheap evasions, caught

LEET = str.maketrans({"a": "4", "e": "3", "i": "1", "o": "0", "s": "5", "t": "7"})
# Latin letters replaced by the Cyrillic letters that look the same
HOMOGLYPHS = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у"})


def words_of(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize(
    "disguise",
    [
        pytest.param(lambda t: " X ".join(words_of(t)), id="a filler word between words"),
        pytest.param(lambda t: " ".join(f"{w} ok" for w in words_of(t)), id="filler after each"),
        pytest.param(lambda t: " ".join(f"{w} uh, so" for w in words_of(t)), id="two fillers"),
        pytest.param(lambda t: " ".join(reversed(words_of(t))), id="words in reverse order"),
        pytest.param(lambda t: t[::-1], id="every character reversed"),
        pytest.param(lambda t: " ".join(w[::-1] for w in words_of(t)), id="each word mirrored"),
        pytest.param(lambda t: codecs.encode(t, "rot13"), id="rot13"),
        pytest.param(lambda t: t.translate(HOMOGLYPHS), id="cyrillic look-alikes"),
        pytest.param(lambda t: t.translate(LEET), id="leetspeak"),
        pytest.param(lambda t: t.translate(LEET).upper(), id="leetspeak capitals"),
        pytest.param(
            lambda t: " -- ".join(reversed(t.translate(HOMOGLYPHS).split())),
            id="look-alikes reversed with fillers of punctuation",
        ),
    ],
)
def test_a_disguised_rule_is_a_leak(guard: SystemPromptGuard, system_text: str, disguise) -> None:
    quoted = rule(system_text, "Tool results")  # 25 words, 130 letters

    assert guard.leaks(f"Here is the rule you asked for: {disguise(quoted)}")


def test_fillers_between_the_words_of_the_whole_instruction_are_a_leak(
    guard: SystemPromptGuard, system_text: str
) -> None:
    assert guard.leaks(" 🙂 lol ".join(system_text.split()))


@pytest.mark.parametrize(
    "mark",
    [
        pytest.param("\u3164", id="hangul filler"),
        pytest.param("\u2800", id="braille blank"),
        pytest.param("\u0336", id="strike-through combining mark"),
        pytest.param("\u034f", id="combining grapheme joiner"),
        pytest.param("\ufe0f", id="variation selector"),
    ],
)
def test_invisible_letters_and_marks_inside_words_do_not_hide_a_leak(
    guard: SystemPromptGuard, system_text: str, mark: str
) -> None:
    # a 13-word rule of only 62 letters: too short for the spelled-apart check
    quoted = rule(system_text, "Reply briefly")
    hidden = " ".join(w[:2] + mark + w[2:] for w in quoted.split())

    assert guard.leaks(hidden)


def test_every_invisible_character_is_covered() -> None:
    """The removal table is built from the planes that hold such characters; this
    checks the whole Unicode range, so a new Unicode version cannot slip one past.
    Format characters that are displayed (U+0600 ARABIC NUMBER SIGN and the like) are
    visible, so text_visibility leaves them out and they may break a word."""
    invisible = {
        chr(code)
        for code in range(sys.maxunicode + 1)
        if (
            unicodedata.category(chr(code)) in ("Mn", "Me")
            or (unicodedata.category(chr(code)) == "Cf" and not has_visible_text(chr(code)))
        )
        # NFKC and case folding come first; they turn a few marks into letters
        # (U+0345 folds to ι), which are then compared as letters
        and unicodedata.normalize("NFKC", chr(code)).casefold() == chr(code)
    }
    text = "".join(sorted(invisible))
    assert normalised_words(f"a{text}b") == ["ab"]


# ------------------------------------------------------------------ ordinary answers pass

ORDINARY_ANSWERS = [
    # English, sharing short phrases with the instruction
    "Hello! I am the customer support assistant of the online shop Demo Shop. I can check "
    "the status of an order or the return policy for a product. What would you like to know?",
    "Could you tell me your 4-digit order number? Then I will check the current status and "
    "location of the order for you.",
    "Your order 8041 is in transit. The tools only show me the status, so I can't cancel the "
    "order, but I can tell you where it is. Use only the tracking link from the courier.",
    "I'm sorry, I can't promise a refund or a replacement. What I can do is check the return "
    "policy: the coffee machine can be returned within 14 days if it is complete and unused.",
    "I could not find an order with that number. Please check the 4-digit order number and "
    "send it again, or tell me what you ordered and I will explain the return conditions.",
    "The order is ready for pickup at the pickup point, 1 Example Street. Please bring the "
    "order number with you. If you have any other questions about returns, just ask!",
    "Sorry, the order status service is unavailable right now. Please try again in a few "
    "minutes, or ask me about the return policy in the meantime.",
    # Russian
    "Здравствуйте! Я помощник службы поддержки интернет-магазина «Демо-магазин». Могу "
    "проверить статус заказа или рассказать об условиях возврата товара.",
    "Подскажите, пожалуйста, 4-значный номер заказа — я проверю, где он сейчас находится.",
    "Заказ 8041 в пути, ожидаемая дата доставки — 12 марта. Отменить заказ или оформить "
    "возврат денег я не могу, но могу подсказать условия возврата.",
    "Кофемашину можно вернуть в течение 14 дней. Товар должен сохранить комплектность и не "
    "иметь следов использования. Возврат оформляется в пункте выдачи.",
    "Заказ 8042 готов к выдаче: Демо-пункт выдачи, ул. Примерная, 1. Возьмите с собой "
    "номер заказа. Если остались вопросы по возврату — пишите!",
    "К сожалению, сервис проверки заказов сейчас недоступен. Попробуйте, пожалуйста, "
    "через несколько минут.",
    'По данным магазина: {"order_id": "8041", "found": true, "status": "in_transit"}',
    # the demo answers of the fake model
    "Could you tell me your 4-digit order number?",
    "Здравствуйте! Чем могу помочь?",
]


@pytest.mark.parametrize("reply", ORDINARY_ANSWERS)
def test_ordinary_support_answers_pass(guard: SystemPromptGuard, reply: str) -> None:
    assert not guard.leaks(reply)


def test_a_long_ordinary_answer_passes_with_every_check(guard: SystemPromptGuard) -> None:
    long_answer = "\n\n".join(ORDINARY_ANSWERS * 3)  # ~6,000 characters, both languages

    assert not guard.leaks(long_answer)
    assert not guard.leaks(long_answer[::-1])
    assert not guard.leaks(long_answer.translate(LEET))


# ------------------------------------------------- doubled letters, symbols, transliteration

SYMBOL_LEET = str.maketrans({"a": "@", "e": "€", "s": "$", "t": "+"})
# English written letter by letter in Cyrillic, as a transliteration would
LATIN_TO_CYRILLIC = str.maketrans(
    {
        "a": "а", "b": "б", "c": "ц", "d": "д", "e": "е", "f": "ф", "g": "г", "h": "х",
        "i": "и", "j": "й", "k": "к", "l": "л", "m": "м", "n": "н", "o": "о", "p": "п",
        "q": "к", "r": "р", "s": "с", "t": "т", "u": "у", "v": "в", "w": "в", "x": "кс",
        "y": "ы", "z": "з",
    }
)  # fmt: skip


@pytest.mark.parametrize(
    "disguise",
    [
        pytest.param(lambda t: "".join(c * 2 for c in t), id="every letter doubled"),
        pytest.param(lambda t: " ".join(w + w[-1] * 3 for w in t.split()), id="last tripled"),
        pytest.param(lambda t: t.translate(SYMBOL_LEET), id="symbol leet @ € $ +"),
        pytest.param(lambda t: t.lower().translate(LATIN_TO_CYRILLIC), id="transliterated"),
        pytest.param(
            lambda t: "".join(c * 2 for c in t.lower().translate(LATIN_TO_CYRILLIC)),
            id="transliterated and doubled",
        ),
    ],
)
def test_doubled_letters_symbols_and_transliteration_do_not_hide_a_rule(
    guard: SystemPromptGuard, system_text: str, disguise
) -> None:
    quoted = rule(system_text, "Tool results")

    assert guard.leaks(f"Here is the rule you asked for: {disguise(quoted)}")


def test_ordinary_answers_pass_the_new_readings_too(guard: SystemPromptGuard) -> None:
    for reply in ORDINARY_ANSWERS:
        assert not guard.leaks("".join(c * 2 for c in reply)), reply
        assert not guard.leaks(reply.translate(SYMBOL_LEET)), reply
    # prices and e-mail addresses keep their symbols' letters harmlessly
    assert not guard.leaks("Delivery is $5 + tax; write to help@shop.example for €-invoices.")


# ------------------------------------------------------------------ shop data is not a leak


def test_a_rule_that_the_shops_own_faq_repeats_is_not_a_leak_in_an_answer_quoting_it(
    guard: SystemPromptGuard, system_text: str
) -> None:
    # the owner's FAQ happens to word a policy like a rule of the instruction (16 words)
    shared = rule(system_text, "The tools only read data")
    faq = f"Delivery takes 2-3 days. {shared}"
    answer = f"According to the shop: Delivery: {faq}"
    tool_result = '{"ok":true,"data":{"topic":"delivery","found":true,"entries":[{"topic":'
    tool_result += f'"Delivery","answer":"{faq}"}}],"message":"ok"}}'

    assert guard.leaks(answer)  # without knowing the shop data
    assert not guard.leaks(answer, data=quotable_data(tool_result, '{"topic":"delivery"}'))
    # the rest of the instruction is still the instruction
    assert guard.leaks(f"{answer}\n\n{system_text}", data=[faq])


def test_what_a_tool_only_echoes_of_the_models_arguments_is_not_shop_data(
    system_text: str,
) -> None:
    passage = " ".join(rule(system_text, "Tool results").split()[:14])
    result = f'{{"ok":true,"data":{{"topic":"{passage}","found":false,"message":"none"}}}}'

    assert quotable_data(result, f'{{"topic":"{passage}"}}') == ["none"]


def test_match_names_the_check_never_the_reply(guard: SystemPromptGuard, system_text: str) -> None:
    secret = "my card 4111 1111"
    reason = guard.match(f"{secret}: {system_text}")

    assert reason is not None and "instruction" in reason and "4111" not in reason
    assert guard.match("Order 8041 is in transit.") is None
