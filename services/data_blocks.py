"""Text placed inside a prompt's data block cannot open or close that block.

Prompts carry data between tags (`<conversation_summary>`, `<previous_summary>`,
`<messages>`) and tell the model it is data, not instructions. Customer text — or a
summary made from it — could otherwise close the block early and go on as if it were
the instruction, so each tag inside it becomes a harmless look-alike: `<tag>` ->
`(tag)`, `</tag>` -> `(/tag)`. One helper, so every data block is defused the same way.
"""

from __future__ import annotations


def defuse_tags(text: str, *tags: str) -> str:
    """`text` with every opening and closing form of `tags` rewritten in parentheses."""
    for tag in tags:
        text = text.replace(f"</{tag}>", f"(/{tag})").replace(f"<{tag}>", f"({tag})")
    return text
