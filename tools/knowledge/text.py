"""Words → Snowball stems (Russian and English), for the lexical index and its queries.

The same function stems what is indexed and what is asked, so "доставки", "доставку" and
"доставка" meet, as do "deliver", "delivery" and "delivering". A word with a Cyrillic
letter goes to the Russian stemmer, any other to the English one (PyStemmer: the
Snowball stemmers compiled, fast enough to stem a whole site while it is indexed).
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CYRILLIC = re.compile(r"[а-яё]")
_CYRILLIC_ANY_CASE = re.compile(r"[\u0400-\u04FF]")
_LATIN = re.compile(r"[A-Za-z]")

# Words that carry no topic, left out of queries (a question is mostly these).
STOP_WORDS = frozenset(
    """
    a an and are as at be but by can could do does did for from have has how i if in is it
    its me my no not of on or our please so that the their them there these they this to
    us was we what when where which who why will with would you your yours about any
    also am been being get got hi hello just more most other should some than then too
    very want need tell know
    а без бы был была были было в вам вас весь во вот все всё вы где да даже для до его
    ее её если есть еще ещё же за здравствуйте и из или им их к как какая какие какой
    когда кто ли либо мне мной мы на над не нет ни но ну о об однако он она они оно от
    по под пожалуйста при привет про с со так также такой там те тем то тоже только том
    ту ты у уже хочу хотел хотела чем что чтобы эта эти это этот я можно могу мочь ваш
    ваша ваше ваши подскажите скажите
    """.split()
)

_local = threading.local()  # a Stemmer object is not safe across threads


def _stemmers() -> tuple[Stemmer.Stemmer, Stemmer.Stemmer]:
    pair: tuple[Stemmer.Stemmer, Stemmer.Stemmer] | None = getattr(_local, "pair", None)
    if pair is None:
        pair = (Stemmer.Stemmer("russian"), Stemmer.Stemmer("english"))
        _local.pair = pair
    return pair


def words(text: str) -> list[str]:
    """The words of `text`, casefolded, 'ё' as 'е'."""
    return _WORD.findall(text.casefold().replace("ё", "е"))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """One casefolded word's stem."""
    russian, english = _stemmers()
    return str((russian if _CYRILLIC.search(word) else english).stemWord(word))


def stems(text: str) -> list[str]:
    """The stems of every word of `text`, in order (what the index stores)."""
    return [stem(w) for w in words(text)]


def query_stems(text: str) -> list[str]:
    """The distinct stems of a question's content words, in order (stop words left out;
    a question made only of stop words keeps them)."""
    all_words = words(text)
    content = [w for w in all_words if w not in STOP_WORDS] or all_words
    return list(dict.fromkeys(stem(w) for w in content))


def query_words(text: str) -> list[str]:
    """The distinct content words of a question as written (for PostgreSQL's own stemming)."""
    all_words = words(text)
    content = [w for w in all_words if w not in STOP_WORDS] or all_words
    return list(dict.fromkeys(content))


def script_of(text: str) -> str:
    """Which alphabet, "cyrillic" or "latin", most of the text's letters are in."""
    cyrillic = len(_CYRILLIC_ANY_CASE.findall(text))
    return "cyrillic" if cyrillic >= len(_LATIN.findall(text)) else "latin"
