"""Model Markdown becomes Telegram-safe HTML with a plain twin, split within the limit."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from bot.telegram.formatting import TELEGRAM_TEXT_LIMIT, markdown_to_messages, utf16_len

ALLOWED_TAGS = {"b", "i", "s", "code", "pre", "a"}


class _TagChecker(HTMLParser):
    """Fails on unknown tags and on tags that are not properly nested."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag in ALLOWED_TAGS, tag
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()


def assert_valid_html(text: str) -> None:
    checker = _TagChecker()
    checker.feed(text)
    checker.close()
    assert checker.stack == []
    # nothing but our tags and escaped entities: no raw "<" or "&" left
    stripped = re.sub(r"</?(b|i|s|code|pre|a)( [^>]*)?>", "", text)
    assert "<" not in stripped and ">" not in stripped
    assert not re.search(r"&(?!(amp|lt|gt|quot);)", stripped)


def one(markdown: str) -> tuple[str, str]:
    [message] = markdown_to_messages(markdown)
    assert_valid_html(message.html)
    return message.html, message.plain


def test_common_markdown_becomes_telegram_html() -> None:
    html, plain = one(
        "**Заказ 8041**: *в пути*, трек `AB<12>` — [сайт](https://shop.example/t?a=1&b=2)"
    )
    assert html == (
        "<b>Заказ 8041</b>: <i>в пути</i>, трек <code>AB&lt;12&gt;</code> — сайт "
        '(<a href="https://shop.example/t?a=1&amp;b=2">https://shop.example/t?a=1&amp;b=2</a>)'
    )
    assert plain == "Заказ 8041: в пути, трек AB<12> — сайт (https://shop.example/t?a=1&b=2)"


@pytest.mark.parametrize(
    ("markdown", "shown"),
    [
        ("[Pay here](https://evil.example/pay)", "Pay here (https://evil.example/pay)"),
        # a link text that looks like the shop's address does not hide the real one
        (
            "[https://shop.example/pay](https://evil.example/pay)",
            "https://shop.example/pay (https://evil.example/pay)",
        ),
        # a look-alike host in another script is shown as what it is
        ("[оплата](https://shор.example/pay)", "оплата (https://xn--sh-gmci.example/pay)"),
        # a link whose text is its address is shown once
        ("[https://shop.example](https://shop.example)", "https://shop.example"),
    ],
)
def test_a_links_target_is_always_in_sight(markdown: str, shown: str) -> None:
    html, plain = one(markdown)
    assert plain == shown
    visible = re.sub(r"<[^>]+>", "", html).replace("&amp;", "&")
    assert visible == shown
    for href in re.findall(r'href="([^"]+)"', html):
        assert href.replace("&amp;", "&") in visible  # every target is in the visible text


def test_lists_headings_and_code_blocks() -> None:
    html, plain = one(
        "# Возврат\n- 14 дней\n- чек __обязателен__\n\n1. Шаг\n2. Шаг\n\n```\nx < 1 && y\n```"
    )
    assert html.startswith("<b>Возврат</b>\n• 14 дней\n• чек <b>обязателен</b>\n\n1. Шаг\n2. Шаг")
    assert html.endswith("<pre>x &lt; 1 &amp;&amp; y</pre>")
    assert "x < 1 && y" in plain


@pytest.mark.parametrize(
    "text",
    [
        "2 * 3 * 4 = 24",
        "snake_case_name and file_name_here",
        "**not closed",
        "<script>alert(1)</script> & <b>fake</b>",
        "[link](javascript:alert(1))",
        "emoji 👍🏽 and RTL שלום and zero\u200bwidth",
    ],
)
def test_everything_else_is_escaped_literally(text: str) -> None:
    html, plain = one(text)
    assert plain == text
    assert "<script>" not in html and "javascript:" not in html.split('href="')[-1][:11]


def test_long_answer_is_split_on_paragraphs_within_the_limit() -> None:
    paragraphs = [f"Абзац {i}: " + "слово " * 150 for i in range(12)]
    messages = markdown_to_messages("\n\n".join(paragraphs))
    assert len(messages) > 1
    for message in messages:
        assert utf16_len(message.html) <= TELEGRAM_TEXT_LIMIT
        assert_valid_html(message.html)
        assert message.plain.startswith("Абзац")  # each part starts at a paragraph
    assert sum(m.plain.count("Абзац") for m in messages) == 12


def test_over_long_line_and_code_block_are_cut_without_breaking_tags() -> None:
    code = "```python\n" + "\n".join(f"print({i})  # " + "x" * 60 for i in range(200)) + "\n```"
    for text in (code, "**" + "я" * 9000 + "**", "😀" * 5000):
        messages = markdown_to_messages(text)
        assert len(messages) > 1
        for message in messages:
            assert utf16_len(message.html) <= TELEGRAM_TEXT_LIMIT
            assert_valid_html(message.html)


def test_emoji_count_as_two_utf16_units() -> None:
    assert utf16_len("😀") == 2
    messages = markdown_to_messages("😀" * 3000)
    assert all(utf16_len(m.html) <= TELEGRAM_TEXT_LIMIT for m in messages)
    assert "".join(m.plain for m in messages) == "😀" * 3000


def test_blank_answer_gives_no_messages() -> None:
    assert markdown_to_messages("  \n\n ") == []
