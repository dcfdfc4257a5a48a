"""The shop FAQ's matching rule, shared by the import document, the demo data and
`get_shop_info`, so that whatever is stored is found again.

A topic or alias is stored as its *key*: normalised like a product name
(`normalise_product_name`: trimmed, casefolded, 'ё' as 'е') and reduced to its words
(letters and digits; punctuation dropped), e.g. "E-mail!" → "e mail". A question is
matched by its keys too: an entry is found when its topic or one of its aliases appears
in the question as whole consecutive words ("Сколько стоит доставка?" finds the entry
with the alias "доставка"). Word forms are not guessed: a shop lists the forms its
customers use ("доставки", "доставку") as aliases, as it does for return policies.
"""

from __future__ import annotations

import re

from tools.shop.rules import normalise_product_name

_WORD_RE = re.compile(r"\w+")

# The word runs of a question are at most this long; a topic or alias of more words is
# found only when the question is exactly it.
MAX_KEY_WORDS = 8
# The entry a miss points the customer to: its topic or an alias has one of these keys.
CONTACTS_KEYS = ("контакты", "contacts")


def faq_key(text: str) -> str:
    """The lookup key of a topic, an alias or a whole question ("" if it has no words)."""
    return " ".join(_WORD_RE.findall(normalise_product_name(text)))


def question_keys(text: str) -> list[str]:
    """The keys a question can match: the whole question first, then every run of
    consecutive words (up to MAX_KEY_WORDS words), positions in order, longest first at
    each position. A question of n words has at most 1 + 8n keys."""
    whole = faq_key(text)
    words = whole.split()
    keys: list[str] = [whole] if whole else []
    for start in range(len(words)):
        for end in range(min(len(words), start + MAX_KEY_WORDS), start, -1):
            keys.append(" ".join(words[start:end]))
    return list(dict.fromkeys(keys))
