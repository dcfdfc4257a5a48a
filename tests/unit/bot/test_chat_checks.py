"""Which texts count as empty before anything is sent to the model.

A text made only of characters that render as nothing — of every Unicode blank or filler
class, not only format characters — is empty: the customer gets the empty-message reply
and the model is not called.
"""

from __future__ import annotations

import pytest

from bot.telegram.routers.chat import has_visible_text

# one row per class: (name, characters of that class)
INVISIBLE_CLASSES: list[tuple[str, str]] = [
    ("ascii whitespace", " \t\n\r\x0b\x0c"),
    ("next line U+0085", "\x85"),
    ("line/paragraph separators", "\u2028\u2029"),
    ("no-break spaces", "\u00a0\u202f"),
    ("every Zs space", "\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u205f"),
    ("ideographic space", "\u3000"),
    ("other controls (Cc)", "\x00\x01\x1f\x7f\x9f"),
    ("zero-width and direction marks", "\u200b\u200c\u200d\u200e\u200f"),
    ("bidi embeddings", "\u202a\u202b\u202c\u202d\u202e"),
    ("bidi isolates", "\u2066\u2067\u2068\u2069"),
    ("word joiner, invisible operators", "\u2060\u2061\u2062\u2063\u2064"),
    ("byte order mark", "\ufeff"),
    ("soft hyphen", "\u00ad"),
    ("arabic letter mark", "\u061c"),
    ("hangul filler", "\u3164"),
    ("hangul choseong/jungseong fillers", "\u115f\u1160"),
    ("halfwidth hangul filler", "\uffa0"),
    ("braille pattern blank", "\u2800"),
    ("mongolian vowel separator", "\u180e"),
    ("mongolian variation selectors", "\u180b\u180c\u180d\u180f"),
    ("combining grapheme joiner", "\u034f"),
    ("variation selectors", "".join(map(chr, range(0xFE00, 0xFE10)))),
    ("variation selectors supplement", "\U000e0100\U000e01ef"),
    ("tag characters", "\U000e0001\U000e0020\U000e0041\U000e007f"),
    ("khmer inherent vowels", "\u17b4\u17b5"),
    ("musical null notehead", "\U0001d159"),
    ("musical formatting", "".join(map(chr, range(0x1D173, 0x1D17B)))),
    ("shorthand format controls", "\U0001bca0\U0001bca3"),
    ("interlinear annotation", "\ufff9\ufffa\ufffb"),
]


@pytest.mark.parametrize(
    ("name", "chars"), INVISIBLE_CLASSES, ids=[n for n, _ in INVISIBLE_CLASSES]
)
def test_every_blank_or_filler_class_is_empty(name: str, chars: str) -> None:
    for ch in chars:
        assert not has_visible_text(ch), f"{name}: U+{ord(ch):04X}"
        assert not has_visible_text(ch * 50), f"{name}: U+{ord(ch):04X} repeated"
    assert not has_visible_text(chars)


def test_all_classes_mixed_are_empty() -> None:
    assert not has_visible_text("".join(chars for _, chars in INVISIBLE_CLASSES))


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u200b\u200b", "\u2060 \ufeff", "\u200d"])
def test_invisible_text_is_empty(text: str) -> None:
    assert not has_visible_text(text)


VISIBLE = [
    "a",
    "8041",
    "👍",
    "👍\ufe0f",  # emoji with its presentation selector
    "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",  # flag: tag sequence
    "שלום\u200f",
    " ?",
    "где заказ",
    "注文はどこ",
    "한국어",  # real Hangul syllables, not fillers
    "أين طلبي",
    "\u0600",  # Arabic number sign: a format character that is shown
    "\u3164\u3164\u2800x",  # one visible character after fillers
    "\u200b" * 100 + ".",
]


@pytest.mark.parametrize("text", VISIBLE)
def test_visible_text_is_not(text: str) -> None:
    assert has_visible_text(text)
