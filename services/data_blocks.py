"""Text placed inside a prompt's data block cannot open or close that block.

Prompts carry data between tags (`<conversation_summary>`, `<previous_summary>`,
`<messages>`) and tell the model it is data, not instructions. Customer text — or a
summary made from it — could otherwise close the block early and go on as if it were
the instruction, so each tag inside it becomes a harmless look-alike: `<tag>` ->
`(tag)`, `</tag>` -> `(/tag)`. A model reads `</CONVERSATION_SUMMARY>`,
`</ conversation_summary >` or `<conversation_summary id="2">` as the same tag, so case,
spaces and attributes do not matter either. One helper, so every data block is defused
the same way.
"""

from __future__ import annotations

import re
from functools import lru_cache


def defuse_tags(text: str, *tags: str) -> str:
    """`text` with every opening and closing form of `tags` rewritten in parentheses."""
    if not tags:
        return text
    return _tags_pattern(tags).sub(lambda m: f"({m[1]}{m[2]})", text)


@lru_cache(maxsize=16)
def _tags_pattern(tags: tuple[str, ...]) -> re.Pattern[str]:
    names = "|".join(re.escape(tag) for tag in tags)
    return re.compile(rf"<\s*(/?)\s*({names})(?![\w-])[^<>]*>", re.IGNORECASE)
