"""The one definition of characters that render as nothing, checked against Unicode data."""

from __future__ import annotations

import sys
import unicodedata

from services.output_guard import SystemPromptGuard, normalised_words
from services.prompts import build_prompt_registry
from services.text_visibility import IGNORABLE, has_visible_text

# Prepended_Concatenation_Mark (PropList.txt): format characters that are displayed.
PREPENDED_MARKS = {*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD}


def test_every_format_character_except_prepended_marks_is_ignorable() -> None:
    missing = [
        f"U+{cp:04X}"
        for cp in range(sys.maxunicode + 1)
        if unicodedata.category(chr(cp)) == "Cf"
        and cp not in PREPENDED_MARKS
        and not any(low <= cp <= high for low, high in IGNORABLE)
    ]
    assert missing == []


def test_every_whitespace_and_control_character_is_invisible() -> None:
    missing = [
        f"U+{cp:04X}"
        for cp in range(sys.maxunicode + 1)
        if (chr(cp).isspace() or unicodedata.category(chr(cp)) in {"Cc", "Zs", "Zl", "Zp"})
        and has_visible_text(chr(cp))
    ]
    assert missing == []


def test_letters_digits_symbols_and_marks_are_visible() -> None:
    visible_categories = {"Lu", "Ll", "Lt", "Nd", "Sm", "Sc", "Po", "Ps", "Pe"}
    wrong = [
        f"U+{cp:04X}"
        for cp in range(0x10000)
        if unicodedata.category(chr(cp)) in visible_categories and not has_visible_text(chr(cp))
    ]
    assert wrong == []


def test_empty_text_is_not_visible() -> None:
    assert not has_visible_text("")
    assert has_visible_text("\u2800x")


def test_the_output_guard_removes_the_same_characters() -> None:
    """One definition: what the bot counts as invisible, the guard does not let hide a leak."""
    instruction = build_prompt_registry().render("support_chat", shop_name="Demo Shop").text
    passage = " ".join(instruction.split()[:40])
    for filler in ("\u3164", "\u115f", "\ufe0f", "\u034f", "\U000e0041", "\u17b4"):
        hidden = "".join(ch + filler if ch != " " else ch for ch in passage)
        assert normalised_words(hidden) == normalised_words(passage), f"U+{ord(filler):04X}"
        assert SystemPromptGuard(instruction).leaks(hidden), f"U+{ord(filler):04X}"


def test_controls_and_bidi_overrides_are_removed_but_emoji_and_rtl_marks_stay() -> None:
    from services.text_visibility import without_unsafe_controls

    spoof = "Pay to \u202emoc.elpmaxe\u202c now\x07\x1b[0m\u2066x\u2069\x85"
    assert without_unsafe_controls(spoof) == "Pay to moc.elpmaxe now[0mx"
    kept = "a\tb\nc 👨\u200d👩\u200d👧 ❤\ufe0f שלום\u200f"
    assert without_unsafe_controls(kept) == kept
    assert without_unsafe_controls("one\r\ntwo\rthree") == "one\ntwo\nthree"
