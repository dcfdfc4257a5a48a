"""Which language a text is in, so the answer can follow the customer's.

Small models follow the language of their (English) instruction and tool descriptions
rather than the customer's; the loop checks the final answer against the customer's
language and asks once more when they differ (services/loop.py). The check must not
fire on a Russian answer full of Latin product names, order numbers and links, so it
does not count letters: it counts words that carry a language — Cyrillic words for
Russian, English function words ("the", "your", "is", …) for English, words of any other
script for "other" — after dropping links, e-mail addresses, code and words with digits.
A product name ("AirPods Pro", "WH-1000XM4") carries none.

Only "ru" and "en" are told apart (the bot's own languages); a Latin-script message with
no English function word (German, Spanish…) is in an unknown language, and then nothing
is enforced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RUSSIAN = "ru"
ENGLISH = "en"
OTHER = "other"  # letters of neither script (a model drifting into Chinese, say)
NAMES = {RUSSIAN: "Russian", ENGLISH: "English"}

# links, e-mail addresses, Markdown link targets, inline code: never a language signal
_NOT_WORDS = re.compile(r"https?://\S+|www\.\S+|\S+@\S+|\]\([^)]*\)|`[^`]*`")
_TOKEN = re.compile(r"\S+")
_LETTERS = re.compile(r"[^\W\d_]+")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[a-zA-Z\u00c0-\u024f]")

# English words that only English prose has in numbers: function words, the commonest
# support verbs and greetings. Product names and brands are never among them.
_ENGLISH = frozenset(
    """
    a about after am an and any are as at be been before but by can could did do does
    don for from had has have hello hi how i if in is it its just let me my
    no not of on or our please should so sorry than thank thanks that the their them
    then there they this to unfortunately us was we were what when where which who will
    with would yes you your here sure help order hours days within
    """.split()
)


@dataclass(frozen=True, slots=True)
class Signals:
    """Words carrying a language: Cyrillic words, English function words, other scripts."""

    russian: int = 0
    english: int = 0
    other: int = 0
    words: int = 0  # every word of letters (signals or not)

    @property
    def strongest(self) -> int:
        return max(self.russian, self.english, self.other)

    def share(self, language: str) -> float:
        """The part of the signal words that are in `language` (0 when there are none)."""
        total = self.russian + self.english + self.other
        own = {RUSSIAN: self.russian, ENGLISH: self.english}.get(language, self.other)
        return own / total if total else 0.0


def signals(text: str) -> Signals:
    russian = english = other = words = 0
    for token in _TOKEN.findall(_NOT_WORDS.sub(" ", text)):
        if any(ch.isdigit() for ch in token):
            continue  # order numbers, model codes, prices, times
        for word in _LETTERS.findall(token):
            words += 1
            if _CYRILLIC.search(word):
                russian += 1
            elif _LATIN.search(word):
                if word.casefold() in _ENGLISH:
                    english += 1
            else:
                other += 1
    return Signals(russian=russian, english=english, other=other, words=words)


def language_of(text: str, *, at_least: int = 1) -> str | None:
    """ "ru", "en" or "other" by the words that carry a language; None when no language
    has more such words than each of the others, or fewer than `at_least`."""
    found = signals(text)
    counts = {RUSSIAN: found.russian, ENGLISH: found.english, OTHER: found.other}
    best = max(counts, key=lambda key: counts[key])
    top = counts[best]
    if top < at_least or sum(1 for value in counts.values() if value == top) > 1:
        return None
    return best


def customer_language(text: str, fallback: str | None) -> str | None:
    """The language to answer `text` in: its own when its words say it; `fallback` (the
    language the bot's own texts chose for the chat) when it has no words (an order
    number, an emoji); None — nothing enforced — when it has words of an unknown one."""
    found = language_of(text)
    if found in NAMES:
        return found
    if found is None and signals(text).words == 0 and fallback in NAMES:
        return fallback
    return None


def in_other_language(answer: str, language: str, *, at_least: int = 1) -> bool:
    """True when the answer's words say another language than `language`."""
    found = language_of(answer, at_least=at_least)
    return found is not None and found != language


# a retry that talks about the note itself ("Вы написали в русском языке…"), as the 1.5B
# model did: the note's words, not an answer
_ABOUT_THE_NOTE = re.compile(
    r"русск\w*\s+язык|по-русски|на\s+русском|\brussian\b|\benglish\b|английск\w*\s+язык",
    re.IGNORECASE,
)


def no_answer(retry: str, customer_text: str) -> bool:
    """Whether a retry is no answer to the customer: it repeats their message whole, or
    speaks about the language note (both seen from Qwen2.5-Coder-1.5B when asked again)."""
    said = " ".join(retry.casefold().split())
    asked = " ".join(customer_text.casefold().split()).strip(" ?!.")
    return (len(asked) >= 12 and asked in said) or _ABOUT_THE_NOTE.search(retry) is not None


def note(language: str) -> str:
    """The per-turn note that asks the model once more (sent after the stable prefix)."""
    name = NAMES[language]
    return (
        f"Reply in {name}: the customer writes in {name}. Write your last answer again, "
        f"entirely in {name}, with the same facts; keep order numbers, product names and "
        "links as they are."
    )
