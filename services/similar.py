"""Whether two customers' questions mean the same: words, no model.

Used to notice the same question asked again (`same_question`, the resolution rate's
repeats) and to group the questions the bot could not answer (`group_questions`, /gaps).
A question becomes its content words — lowercased, stop words of Russian and English
dropped, each cut to a crude stem (Russian endings and English suffixes vary, the start
of a word rarely does) — and two questions are compared by the overlap of those stems.
When an embedder is available (the knowledge search's), `group_questions` takes its
similarity instead; this lexical one is the fallback that always works.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_PLACEHOLDER = re.compile(r"\[[^\]\s]{1,20}\]")  # what services/masking.py put in
_STOP = frozenset(
    """
    a an the to of in on at for from by with and or is are was were be been am do does did
    i you we my your our me us it its this that there here can could would will shall
    please hi hello hey thanks thank what how when where which who why whats hows
    have has had give get got need want know tell any some there much many does
    и в во на с со к ко по за из у о об а но или ли же бы не ни да нет то это этот эта эти
    я мы вы ты мне меня вам вас нам нас мой моя мое моё мои ваш ваша ваше ваши он она они
    его ее её их как где когда что чем кто какой какая какие какое почему зачем сколько
    можно нужно надо есть будет был была были ещё еще уже там тут здесь пожалуйста
    привет здравствуйте добрый день вечер утро спасибо скажите подскажите
    хочу хотел хотела нужен нужна узнать дайте дает даёте какой какая какие какое
    """.split()
)
_EN_SUFFIXES = ("ing", "ies", "ed", "es", "s")
STEM_LENGTH = 5
SAME_QUESTION = 0.6  # share of shared stems for "the same question again"
SAME_GROUP = 0.5  # and for "about the same thing" (grouping gaps)


def stems(text: str) -> frozenset[str]:
    """The question's content words as crude stems (see the module notes)."""
    found = set()
    for word in _WORD.findall(_PLACEHOLDER.sub(" ", text).lower()):
        word = word.replace("ё", "е")
        if word in _STOP or len(word) < 2:
            continue
        if word.isascii():
            for suffix in _EN_SUFFIXES:
                if len(word) > len(suffix) + 3 and word.endswith(suffix):
                    word = word[: -len(suffix)]
                    break
        found.add(word[:STEM_LENGTH])
    return frozenset(found)


def similarity(a: str, b: str) -> float:
    """Shared stems over all stems (Jaccard); two questions of no content words (a bare
    "hello") are alike only when their words are the same."""
    sa, sb = stems(a), stems(b)
    if not sa and not sb:
        return 1.0 if _plain(a) == _plain(b) and _plain(a) else 0.0
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def same_question(a: str, b: str) -> bool:
    return similarity(a, b) >= SAME_QUESTION


def _plain(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


@dataclass(slots=True)
class Group(Generic[T]):
    """Questions about the same thing: the first one asked leads."""

    lead: str
    members: list[T] = field(default_factory=list)
    wordings: list[str] = field(default_factory=list)


def group_questions(
    items: Sequence[T],
    text_of: Callable[[T], str],
    *,
    alike: Callable[[str, str], float] = similarity,
    threshold: float = SAME_GROUP,
) -> list[Group[T]]:
    """Groups of questions about the same thing, largest first (equal sizes: the one
    asked first first). Each question joins the group whose lead it is most like, when
    at least `threshold`; else it leads a new group."""
    groups: list[Group[T]] = []
    for item in items:
        text = text_of(item)
        best: Group[T] | None = None
        best_score = threshold
        for group in groups:
            score = alike(group.lead, text)
            if score >= best_score:
                best, best_score = group, score
        if best is None:
            best = Group(lead=text)
            groups.append(best)
        best.members.append(item)
        best.wordings.append(text)
    order = {id(g): i for i, g in enumerate(groups)}
    return sorted(groups, key=lambda g: (-len(g.members), order[id(g)]))
