"""A document's readable text as sections under headings, and its split into passages.

Every reader (HTML, PDF, DOCX, Markdown, text) produces a `ParsedDocument`: a title and
`Section`s, each a heading path ("Delivery", "Pickup") with its blocks (a paragraph, a
list item as "- item", a table row as "cell | cell"). `passages` cuts the sections into
passages of a few hundred words that keep their heading path, never across a heading,
and at block boundaries where it can; a long block is cut at sentence ends.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

MAX_WORDS = 220  # a passage: a few hundred tokens for the embedder (≈ 1.5 tokens a word)
MIN_WORDS = 40  # a shorter tail joins the passage before it (under the same heading)
HEADING_SEPARATOR = " › "

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_SPACES = re.compile(r"[ \t\u00a0]+")


class DocumentError(Exception):
    """The document cannot be read (one line for the owner: what and why)."""


@dataclass(slots=True)
class Section:
    headings: tuple[str, ...]
    blocks: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ParsedDocument:
    title: str
    sections: list[Section]
    links: list[str] = field(default_factory=list)  # absolute URLs (HTML only)

    @property
    def words(self) -> int:
        return sum(len(b.split()) for s in self.sections for b in s.blocks)


def clean(text: str) -> str:
    """One line's text: runs of spaces as one, trimmed."""
    return _SPACES.sub(" ", text).strip()


class SectionBuilder:
    """Collects blocks under the current heading path while a reader walks a document."""

    def __init__(self) -> None:
        self.sections: list[Section] = [Section(())]

    def heading(self, level: int, text: str) -> None:
        text = clean(text)
        if not text:
            return
        # the path keeps the headings above this level; a skipped level (h1 → h3)
        # leaves no gap
        current = self.sections[-1].headings
        self.sections.append(Section((*current[: max(0, level - 1)], text)))

    def block(self, text: str) -> None:
        text = clean(text)
        if text:
            self.sections[-1].blocks.append(text)

    def result(self) -> list[Section]:
        return [s for s in self.sections if s.blocks]


def _cut_long(block: str) -> list[str]:
    """A block over MAX_WORDS in pieces at sentence ends (or at MAX_WORDS words)."""
    if len(block.split()) <= MAX_WORDS:
        return [block]
    pieces: list[str] = []
    current: list[str] = []
    for sentence in _SENTENCE_END.split(block):
        words = sentence.split()
        while len(words) > MAX_WORDS:
            if current:
                pieces.append(" ".join(current))
                current = []
            pieces.append(" ".join(words[:MAX_WORDS]))
            words = words[MAX_WORDS:]
        if len(current) + len(words) > MAX_WORDS and current:
            pieces.append(" ".join(current))
            current = []
        current.extend(words)
    if current:
        pieces.append(" ".join(current))
    return pieces


def _section_passages(blocks: Iterable[str]) -> list[str]:
    passages: list[list[str]] = [[]]
    count = 0
    for block in (piece for b in blocks for piece in _cut_long(b)):
        size = len(block.split())
        if count and count + size > MAX_WORDS:
            passages.append([])
            count = 0
        passages[-1].append(block)
        count += size
    texts = ["\n".join(p) for p in passages if p]
    if len(texts) > 1 and len(texts[-1].split()) < MIN_WORDS:
        tail = texts.pop()
        texts[-1] = f"{texts[-1]}\n{tail}"
    return texts


def passages(document: ParsedDocument) -> list[tuple[str, str]]:
    """(heading path, text) passages of a document, in its order."""
    found: list[tuple[str, str]] = []
    for section in document.sections:
        heading = HEADING_SEPARATOR.join(section.headings)
        found.extend((heading, text) for text in _section_passages(section.blocks))
    return found
