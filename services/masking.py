"""Customers' personal data masked out of text an owner reads or exports.

What the gaps report shows, what a draft from an operator's answer proposes, and what
`support-bot export` writes by default pass through `mask`: phone numbers, e-mail
addresses, card numbers, order numbers (after "заказ", "order", "№", "#", or any word
with four digits or more), Telegram @usernames, street addresses and people's names
(after "меня зовут", "my name is", "I'm", "с уважением", "regards", "на имя", "recipient",
"Mr", "господин"; a common first name with the surname after it; or written as a Russian
full name: surname, name and patronymic) are replaced by a
bracketed word in the reader's language, e.g. `[телефон]`, `[order]`.

Masking errs on the side of hiding: a price of 4 digits or a year is masked too, since
a number the bot cannot tell from an order number must not show. It is text only: no
model, no network, the same result every time.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Language = str  # "ru" | "en"

_PLACEHOLDERS: dict[str, dict[str, str]] = {
    "ru": {
        "email": "[почта]",
        "phone": "[телефон]",
        "card": "[карта]",
        "order": "[заказ]",
        "number": "[число]",
        "username": "[аккаунт]",
        "address": "[адрес]",
        "name": "[имя]",
    },
    "en": {
        "email": "[email]",
        "phone": "[phone]",
        "card": "[card]",
        "order": "[order]",
        "number": "[number]",
        "username": "[account]",
        "address": "[address]",
        "name": "[name]",
    },
}

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE)
_USERNAME = re.compile(r"(?<![\w@])@[A-Za-z][A-Za-z0-9_]{3,31}\b")
# 13-19 digits in groups (a payment card)
_CARD = re.compile(r"(?<![\d+])(?:\d[ -]?){12,18}\d(?!\d)")
# a run of digits with the separators people write phones with
_PHONE = re.compile(r"(?<![\w(])\+?\(?\d[\d\s().-]{5,20}\d(?!\d)")
_PHONE_LOCAL = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{2}(?!\d)")
_ORDER_CUE = re.compile(
    r"(?P<cue>(?:заказ[а-яё]*|order(?:s)?|номер[а-яё]*|№|#|no\.)\s*"
    r"(?:(?:№|#|no\.?|number|номер)\s*)?[:\-]?\s*)"
    r"(?P<number>[A-Za-zА-Яа-яЁё]{0,4}[-/]?\d[\w/-]*)",
    re.IGNORECASE,
)
# any word with 4+ digits (an order number or reference the cue did not announce)
_DIGITS = re.compile(r"(?<![\w\[])[A-Za-zА-Яа-яЁё]{0,4}[-/]?\d{4,}[\w/-]*")
_ADDRESS = re.compile(
    r"\b(?:ул(?:ица)?\.?|пр(?:-т|осп(?:ект)?)\.?|пер(?:еулок)?\.?|ш(?:оссе)?\.|б-р|бульвар|"
    r"наб(?:ережная)?\.?)\s*[А-ЯЁA-Z][\w.-]*(?:\s+[А-ЯЁA-Z][\w.-]*)?"
    r"(?:,?\s*(?:д(?:ом)?\.?|к(?:орп)?\.?|кв(?:артира)?\.?|стр\.?)\s*\d+[а-яa-z]?)*"
    r"|\b\d+[a-z]?\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+(?:St|Street|Ave|Avenue|Rd|Road|Blvd|Lane|Ln|Dr|Drive)\b\.?"
    r"(?:,?\s*(?:apt|apartment|unit|suite)\.?\s*\d+\w?)?",
)
# a capitalised word, whatever the flags around it
_CAP = r"(?-i:[A-ZА-ЯЁ][a-zа-яё]+(?:-[A-ZА-ЯЁ][a-zа-яё]+)?)"
_NAME_CUE = re.compile(
    r"(?P<cue>\b(?:меня\s+зовут|зовут|с\s+уважением,?|на\s+имя|получатель:?|фио:?|"
    r"my\s+name\s+is|i\s+am|i['’]m|this\s+is|regards,?|sincerely,?|recipient:?|name:)\s+)"
    rf"(?P<name>{_CAP}(?:\s+{_CAP}){{0,2}})",
    re.IGNORECASE,
)
# a Russian full name: three capitalised words, the last a patronymic; or a surname with a
# typical ending beside a name
# a Russian surname's endings, in every case: Кузнецов, Кузнецовой, Петрову, Вяземского
_SURNAME = r"(?:(?:ов|ев|ёв|ин|ын)(?:а|ой|у|ым|ом|е|ых)?|(?:ск|цк)(?:ий|ая|ой|ого|ому|им|ую))"
_RU_FULL_NAME = re.compile(
    r"\b[А-ЯЁ][а-яё]+\s+[А-ЯЁ][а-яё]+\s+[А-ЯЁ][а-яё]+(?:вич|вна|чна|ична|ьич)\b"
    rf"|\b[А-ЯЁ][а-яё]+{_SURNAME}\s+[А-ЯЁ][а-яё]{{2,}}\b"
    rf"|\b[А-ЯЁ][а-яё]{{2,}}\s+[А-ЯЁ][а-яё]+{_SURNAME}\b"
)
# common first names (Russian in their stem: Ольга, Ольги, Ольге, Ольгой), masked alone
_FIRST_NAMES = frozenset(
    """
    александр алексе анатоли андре анн антон арина артём артем валентин валери василий
    вер виктор виктори владимир владислав галин дари денис дмитри евгени екатерин елен
    иван ирин кирилл константин ксени лариса любов людмил максим марин мари михаил надежд
    наталь никит никола олег ольг павел павл полин роман светлан серге софь стас тамар
    татьян юли юри яков ян
    alex alexander andrew anna anne ben charles chris daniel david elizabeth emily emma
    george hannah jack james jane jennifer jessica john joseph julia kate laura linda lisa
    maria mark mary matthew michael natalie olivia paul peter rachel richard robert sarah
    sophie steven thomas tom william
    """.split()
)
_CAPITALISED = re.compile(r"\b[A-ZА-ЯЁ][a-zа-яё]{2,}\b")
# a name after a title: "Mr Johnson", "Dr. Anna Lee", "господин Соколов"
_TITLED = re.compile(
    rf"(?P<cue>\b(?-i:Mr|Mrs|Ms|Miss|Mx|Dr)\.?\s+|\b(?:господ[а-яё]*|г-н|г-жа)\.?\s+)"
    rf"(?P<name>{_CAP}(?:\s+{_CAP})?)",
    re.IGNORECASE,
)
_RU_ENDINGS = ("ой", "ей", "ем", "ом", "а", "ы", "е", "у", "ю", "я", "и", "й", "ь")


def _first_name(word: str) -> bool:
    lowered = word.lower().replace("ё", "е")
    if lowered in _FIRST_NAMES:
        return True
    for ending in _RU_ENDINGS:
        if lowered.endswith(ending) and lowered[: -len(ending)] in _FIRST_NAMES:
            return True
    return False


# words after a name cue that are not names ("I am looking", "I'm Not sure", "this is Big")
_NOT_NAMES = frozenset(
    """
    not sure sorry looking waiting trying going writing asking calling here still also
    very just really interested happy unhappy glad a an the from in at on with your you
    is it this that order delivery покупатель клиент
    """.split()
)


def _digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


def mask(text: str, language: Language = "en") -> str:
    """`text` with the personal data above replaced by bracketed words in `language`."""
    words = _PLACEHOLDERS.get(language, _PLACEHOLDERS["en"])
    steps: list[Callable[[str], str]] = [
        lambda t: _EMAIL.sub(words["email"], t),
        lambda t: _USERNAME.sub(words["username"], t),
        lambda t: _CARD.sub(lambda m: words["card"] if _card(m.group()) else m.group(), t),
        lambda t: _ORDER_CUE.sub(lambda m: _order(m, words), t),
        lambda t: _PHONE.sub(lambda m: words["phone"] if _phone(m.group()) else m.group(), t),
        lambda t: _PHONE_LOCAL.sub(words["phone"], t),
        lambda t: _DIGITS.sub(words["number"], t),
        lambda t: _ADDRESS.sub(words["address"], t),
        lambda t: _NAME_CUE.sub(lambda m: _name(m, words), t),
        lambda t: _RU_FULL_NAME.sub(words["name"], t),
        lambda t: _TITLED.sub(lambda m: m.group("cue") + words["name"], t),
        lambda t: _CAPITALISED.sub(
            lambda m: words["name"] if _first_name(m.group()) else m.group(), t
        ),
        # a common first name takes the capitalised word after it along: its surname
        # ("Sarah Johnson"; a Russian surname is found by its ending anyway)
        lambda t: re.sub(rf"({re.escape(words['name'])})\s+{_CAP}\b", r"\1", t),
    ]
    for step in steps:
        text = step(text)
    return text


def _card(found: str) -> bool:
    return 13 <= _digits(found) <= 19 and not found.startswith(("+7", "8 ", "+"))


def _phone(found: str) -> bool:
    return 7 <= _digits(found) <= 15


def _order(match: re.Match[str], words: dict[str, str]) -> str:
    number = match.group("number")
    if _digits(number) < 3 and not any(ch.isalpha() for ch in number):
        return match.group()  # "заказ 2 штук": a count, not a number
    return match.group("cue") + words["order"]


def _name(match: re.Match[str], words: dict[str, str]) -> str:
    name = match.group("name")
    first = name.split()[0].lower()
    if first in _NOT_NAMES:
        return match.group()
    cue = match.group("cue")
    if cue.strip().lower() in ("i am", "i'm", "i’m", "this is") and not name[0].isupper():
        return match.group()
    return cue + words["name"]
