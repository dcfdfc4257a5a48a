"""Which characters render as nothing: defined once, for the bot and the output guard.

Two classes, both as code-point ranges (Python's `unicodedata` knows general categories
but not the properties below, and a table is also faster than a call per character):

* IGNORABLE — characters that render as nothing and take no room: Unicode's
  Default_Ignorable_Code_Point (zero-width spaces and joiners, bidi marks and isolates,
  soft hyphen, invisible operators U+2061..2064, the Hangul fillers U+115F, U+1160,
  U+3164, U+FFA0, Khmer U+17B4/17B5, Mongolian U+180B..180F, the combining grapheme
  joiner, variation selectors, tag characters, U+FEFF, the musical formatting controls
  U+1D173..1D17A, ...) plus the remaining format characters (Cf) except the prepended
  concatenation marks (U+0600..0605, U+06DD, ...), which Arabic and Syriac text shows.
  The output guard deletes these before comparing words: "in<U+200B>struction" is
  "instruction".
* BLANK — characters that show as empty space: White_Space (every Zs space including
  U+3000, tab, line and paragraph separators U+2028/2029, U+0085), the other control
  characters (Cc), and the blank glyphs U+2800 BRAILLE PATTERN BLANK and U+1D159 MUSICAL
  SYMBOL NULL NOTEHEAD. The guard already treats these as word breaks.

A text made only of the two is empty to the reader: `has_visible_text` is False for it.

* UNSAFE_CONTROLS — what no message of ours should carry: the C0 and C1 control
  characters except tab and line feed, and the bidi embeddings, overrides and isolates
  (U+202A..202E, U+2066..2069), which reorder what a reader sees ("Pay to
  <U+202E>moc.elpmaxe" shows as "example.com"). `without_unsafe_controls` removes them
  where text leaves for Telegram (bot/telegram/sender.py) and from topic titles. Joiners,
  variation selectors and the plain direction marks (LRM, RLM, ALM) stay: emoji and
  right-to-left text need them.
Unassigned and private-use code points, lone combining marks and surrogates are counted
as visible (they show as a box, a dotted circle or a replacement mark).
"""

from __future__ import annotations

import re

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1) ...
_DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# ... and the format characters outside it that are not prepended concatenation marks:
# interlinear annotation controls and Egyptian hieroglyph format controls.
_OTHER_FORMAT: tuple[tuple[int, int], ...] = (
    (0xFFF9, 0xFFFB),
    (0x13430, 0x1343F),
)
IGNORABLE: tuple[tuple[int, int], ...] = _DEFAULT_IGNORABLE + _OTHER_FORMAT

BLANK: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0020),  # C0 controls, tab, line feeds, space
    (0x007F, 0x00A0),  # DEL, C1 controls (U+0085 next line), no-break space
    (0x1680, 0x1680),  # Ogham space mark
    (0x2000, 0x200A),  # en quad .. hair space
    (0x2028, 0x2029),  # line and paragraph separators
    (0x202F, 0x202F),  # narrow no-break space
    (0x205F, 0x205F),  # medium mathematical space
    (0x2800, 0x2800),  # Braille pattern blank
    (0x3000, 0x3000),  # ideographic space
    (0x1D159, 0x1D159),  # musical symbol null notehead
)


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(
        re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        for low, high in ranges
    )


_INVISIBLE_RE = re.compile(f"[{_char_class(IGNORABLE + BLANK)}]*")


def has_visible_text(text: str) -> bool:
    """False for text made only of characters that render as nothing (see the module)."""
    return _INVISIBLE_RE.fullmatch(text) is None


UNSAFE_CONTROLS: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008),
    (0x000B, 0x001F),  # keeps tab and line feed
    (0x007F, 0x009F),
    (0x202A, 0x202E),
    (0x2066, 0x2069),
)
_UNSAFE: dict[int, None] = {
    code: None for low, high in UNSAFE_CONTROLS for code in range(low, high + 1)
}


def without_unsafe_controls(text: str) -> str:
    """`text` without control characters and bidi overrides (see the module); a carriage
    return becomes a line feed."""
    return text.replace("\r\n", "\n").replace("\r", "\n").translate(_UNSAFE)
