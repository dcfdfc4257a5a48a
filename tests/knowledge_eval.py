"""The knowledge evaluation: the help centre's questions (tests/data/knowledge/help_centre/
questions.yaml) and how a ranking of them is scored. Shared by the bench
(bench/knowledge_bench.py) and the quality guard test, so both count the same way.

A search answers each question with the sources it ranked, best first, as the paths of
the help centre's pages ("/vozvrat.html", "/files/service-centres.pdf"; `page_path` maps a
URL or a file name to one), and an empty list when it found nothing relevant.

- hit@k: among the questions the help centre answers, the share whose expected page (or
  one of its `also`) is among the first k;
- nothing-relevant rate: among the questions it must not answer, the share answered by an
  empty list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

QUESTIONS_FILE = (
    Path(__file__).resolve().parent / "data" / "knowledge" / "help_centre" / "questions.yaml"
)
KINDS = ("paraphrase", "wordform", "typo", "cross", "none")


@dataclass(frozen=True, slots=True)
class Question:
    q: str
    lang: str
    expect: str | None  # a page's path; None: must not be answered
    also: tuple[str, ...]
    kind: str

    @property
    def accepted(self) -> tuple[str, ...]:
        return () if self.expect is None else (self.expect, *self.also)


def load_questions(path: Path = QUESTIONS_FILE) -> list[Question]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]
    out = []
    for item in raw:
        expect = None if item["expect"] == "none" else str(item["expect"])
        if item["kind"] not in KINDS:
            raise ValueError(f"{item['q']!r}: unknown kind {item['kind']!r}")
        if (expect is None) != (item["kind"] == "none"):
            raise ValueError(f"{item['q']!r}: kind none if and only if expect none")
        also = tuple(str(p) for p in item.get("also", ()))
        out.append(Question(str(item["q"]), str(item["lang"]), expect, also, item["kind"]))
    return out


def page_path(source: str) -> str:
    """A result's source (its URL, or a file's name or path) as the help centre's path:
    "http://127.0.0.1:8123/en/about.html" and "en/about.html" both give "/en/about.html"."""
    if "://" in source:
        return urlsplit(source).path or "/"
    tail = source.replace("\\", "/")
    for marker in ("/pages/", "/help_centre/", "/site/"):
        if marker in tail:
            tail = tail.split(marker, 1)[1]
    return "/" + tail.lstrip("/")


@dataclass(slots=True)
class Score:
    """How a ranking of the questions scored (see the module docstring)."""

    answerable: int = 0
    hit1: int = 0
    hit3: int = 0
    unanswerable: int = 0
    nothing_found: int = 0
    # (question, what came first, or "nothing") for each answerable question missed at 3,
    # and each unanswerable one that got something
    misses: list[tuple[Question, str]] = field(default_factory=list)

    @property
    def hit1_rate(self) -> float:
        return self.hit1 / self.answerable if self.answerable else 0.0

    @property
    def hit3_rate(self) -> float:
        return self.hit3 / self.answerable if self.answerable else 0.0

    @property
    def nothing_rate(self) -> float:
        return self.nothing_found / self.unanswerable if self.unanswerable else 0.0


def score(rankings: Mapping[Question, Sequence[str]]) -> Score:
    """Score rankings (page paths, best first; empty: nothing relevant) of questions."""
    result = Score()
    for question, ranked in rankings.items():
        paths = [page_path(s) for s in ranked]
        if question.expect is None:
            result.unanswerable += 1
            if not paths:
                result.nothing_found += 1
            else:
                result.misses.append((question, paths[0]))
            continue
        result.answerable += 1
        accepted = set(question.accepted)
        if paths[:1] and paths[0] in accepted:
            result.hit1 += 1
        if accepted.intersection(paths[:3]):
            result.hit3 += 1
        else:
            result.misses.append((question, paths[0] if paths else "nothing"))
    return result


def rank_all(
    questions: Sequence[Question], search: Callable[[str], Sequence[str]]
) -> dict[Question, Sequence[str]]:
    """Each question's ranking by a synchronous `search` (for async ones, build the
    mapping with the caller's own loop)."""
    return {q: search(q.q) for q in questions}
