"""Finding products by the customer's words, with the structured filters applied exactly.

Two halves, fused by rank (the knowledge search's `reciprocal_rank_fusion`): a lexical
index (BM25 over the title, the description and the variants' option values, with the
knowledge search's Snowball stems; a query stem of 4+ letters also matches the index's
words it begins) and, when an embedder is there, a semantic one (`VectorRanker`: the
query's vector against each product's, so "тёплая куртка на зиму" finds "Пуховик
Arctic"). The filters
— size, colour, in stock only, a price range — are never fuzzy: a product is returned only
with the variants that satisfy every one of them, and a product none of whose variants
does is left out.

Built once per catalogue snapshot (tools/shop/catalog.py keeps it); searching takes no
I/O. Nothing here reads or returns customer data.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

from tools.knowledge.fusion import reciprocal_rank_fusion
from tools.knowledge.text import STOP_WORDS, stem
from tools.knowledge.text import words as text_words
from tools.shop.products import Availability, Product, StockWords, Variant

if TYPE_CHECKING:  # numpy is imported only where vectors are made (it starts threads)
    from tools.knowledge.embedder import Vectors

# besides the knowledge search's stop words: what a shopping question is full of
_STOP = STOP_WORDS | frozenset(
    "сколько стоит стоят стоимость цена нужен нужна нужно нужны купить есть ли "
    "how much price cost costs buy have has sell".split()
)
# a prefix match of a query word counts this much of an exact one
_PREFIX_WEIGHT = 0.7
_MIN_PREFIX = 4
# field weights: a title word says more than a description's
_TITLE_WEIGHT = 3.0
_OPTION_WEIGHT = 1.5
_K1, _B = 1.2, 0.75

_SIZE_NAMES = ("size", "размер", "talla", "größe", "taille")
_COLOUR_NAMES = ("colour", "color", "цвет", "farbe", "couleur")
# basic colours across the two languages the bot speaks, so "чёрный" finds "Black"
_COLOURS = {
    "black": ("black", "черн"),
    "white": ("white", "бел"),
    "red": ("red", "красн"),
    "blue": ("blue", "син", "голуб"),
    "green": ("green", "зелен"),
    "yellow": ("yellow", "желт"),
    "grey": ("grey", "gray", "сер"),
    "brown": ("brown", "коричнев"),
    "pink": ("pink", "розов"),
    "orange": ("orange", "оранжев"),
    "purple": ("purple", "фиолетов"),
    "beige": ("beige", "бежев"),
}


def fold(text: str) -> str:
    return text.casefold().replace("ё", "е")


def words(text: str) -> list[str]:
    """The Snowball stems of a text's content words (as the knowledge search stems)."""
    return [stem(w) for w in text_words(text) if w not in _STOP]


def colour_key(value: str) -> str:
    """One key per basic colour in either language; any other value as its stems."""
    folded = _value_key(value)
    for key, spellings in _COLOURS.items():
        if any(folded.startswith(s) for s in spellings):
            return key
    return folded


def _value_key(value: str) -> str:
    return " ".join(stem(w) for w in text_words(value))


@dataclass(frozen=True, slots=True)
class Filters:
    """What the customer asked for exactly (None: not asked)."""

    size: str | None = None
    colour: str | None = None
    in_stock_only: bool = False
    price_min: Decimal | None = None
    price_max: Decimal | None = None

    @property
    def given(self) -> bool:
        return (
            any(v is not None for v in (self.size, self.colour, self.price_min, self.price_max))
            or self.in_stock_only
        )


def _options_named(variant: Variant, names: tuple[str, ...]) -> list[str]:
    return [value for name, value in variant.options if fold(name).startswith(names)]


def variant_matches(variant: Variant, filters: Filters, stock: StockWords) -> bool:
    """Every filter given holds for the variant (option names decide which option is the
    size or the colour; with no such option, any option's value may be it)."""
    if filters.size is not None:
        values = _options_named(variant, _SIZE_NAMES) or [v for _, v in variant.options]
        if _value_key(filters.size) not in {_value_key(v) for v in values}:
            return False
    if filters.colour is not None:
        values = _options_named(variant, _COLOUR_NAMES) or [v for _, v in variant.options]
        if colour_key(filters.colour) not in {colour_key(v) for v in values}:
            return False
    if filters.price_min is not None or filters.price_max is not None:
        if variant.price is None:
            return False
        amount = variant.price.amount
        if filters.price_min is not None and amount < filters.price_min:
            return False
        if filters.price_max is not None and amount > filters.price_max:
            return False
    return not (filters.in_stock_only and stock.availability(variant) is Availability.OUT_OF_STOCK)


class SemanticRanker(Protocol):
    """The meaning half: product positions, best first, close enough to the query's
    vector to be about it (an empty list when none is)."""

    def rank(self, query: Vectors, limit: int) -> list[int]: ...


class VectorRanker:
    """Products' unit vectors (one row per position) against a query's: cosine, kept
    from `min_similarity` up."""

    def __init__(self, vectors: Vectors, min_similarity: float) -> None:
        self._vectors = vectors
        self._floor = min_similarity

    def rank(self, query: Vectors, limit: int) -> list[int]:
        import numpy as np

        from tools.knowledge.embedder import similarities

        if not len(self._vectors):
            return []
        scores = similarities(self._vectors, query)
        chosen = np.flatnonzero(scores >= self._floor)
        best = chosen[np.argsort(-scores[chosen], kind="stable")][:limit]
        return [int(i) for i in best]


def product_text(product: Product) -> str:
    """What a product is embedded as: its title, option values and the description's
    beginning (short: embedding is the slow part)."""
    values = sorted({value for v in product.variants for _, value in v.options})
    text = f"{product.title}. {', '.join(values[:12])}. {product.description[:300]}"
    return text.strip(" .")


@dataclass(frozen=True, slots=True)
class Hit:
    product: Product
    variants: tuple[Variant, ...]  # the ones every filter holds for, in the shop's order


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[Hit, ...]
    # products the words found whose asked variants are all out of stock (in_stock_only)
    out_of_stock: tuple[Product, ...] = ()


class ProductIndex:
    """The lexical index of one catalogue snapshot (module docstring)."""

    def __init__(self, products: Sequence[Product]) -> None:
        self.products = tuple(products)
        self._by_id = {p.product_id: p for p in self.products}
        self._postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        lengths: list[float] = []
        for position, product in enumerate(self.products):
            counts: dict[str, float] = defaultdict(float)
            for word in words(product.title):
                counts[word] += _TITLE_WEIGHT
            values = {value for v in product.variants for _, value in v.options}
            for word in (w for value in values for w in words(value)):
                counts[word] += _OPTION_WEIGHT
            for word in words(product.description):
                counts[word] += 1.0
            for word, tf in counts.items():
                self._postings[word].append((position, tf))
            lengths.append(sum(counts.values()))
        self._lengths = lengths
        self._average = (sum(lengths) / len(lengths)) if lengths else 1.0
        self._vocabulary = sorted(self._postings)

    def get(self, product_id: str) -> Product | None:
        return self._by_id.get(product_id)

    def lexical(self, query: str, limit: int) -> list[int]:
        """Product positions by BM25, best first: only products sharing a word with
        letters (a number alone, "15", is no match: sizes and volumes are everywhere)."""
        scores: dict[int, float] = defaultdict(float)
        named: set[int] = set()
        n = len(self.products)
        for word in dict.fromkeys(words(query)):
            lettered = not word.isdigit()
            for term, weight in self._terms(word):
                postings = self._postings[term]
                idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
                for position, tf in postings:
                    norm = _K1 * (1 - _B + _B * self._lengths[position] / self._average)
                    scores[position] += weight * idf * tf * (_K1 + 1) / (tf + norm)
                    if lettered:
                        named.add(position)
        ranked = sorted(named, key=lambda p: (-scores[p], p))
        return ranked[:limit]

    def _terms(self, word: str) -> Iterable[tuple[str, float]]:
        """The index's words a query word matches: itself, and (4+ letters) the words it
        begins."""
        if word in self._postings:
            yield word, 1.0
        if len(word) < _MIN_PREFIX:
            return
        start = bisect.bisect_left(self._vocabulary, word)
        for term in self._vocabulary[start:]:
            if not term.startswith(word):
                break
            if term != word:
                yield term, _PREFIX_WEIGHT

    def search(
        self,
        query: str,
        filters: Filters,
        stock: StockWords,
        *,
        limit: int,
        meaning: list[int] | None = None,
    ) -> SearchResult:
        """The best `limit` products for `query` whose variants satisfy `filters`;
        `meaning`: the semantic half's ranking of the same query, fused by rank."""
        depth = max(50, limit * 10)
        rankings = [self.lexical(query, depth)]
        if meaning:
            rankings.append(meaning)
        hits: list[Hit] = []
        out_of_stock: list[Product] = []
        relaxed = Filters(filters.size, filters.colour, False, filters.price_min, filters.price_max)
        for position in fuse(rankings):
            product = self.products[position]
            chosen = tuple(v for v in product.variants if variant_matches(v, filters, stock))
            if chosen:
                hits.append(Hit(product, chosen))
            elif filters.in_stock_only and any(
                variant_matches(v, relaxed, stock) for v in product.variants
            ):
                out_of_stock.append(product)
            if len(hits) >= limit:
                break
        return SearchResult(tuple(hits), tuple(out_of_stock[:limit]))


def fuse(rankings: Sequence[Sequence[int]]) -> list[int]:
    """Reciprocal-rank fusion of rankings of the same items, best first."""
    if len(rankings) == 1:
        return list(rankings[0])
    return [item for item, _ in reciprocal_rank_fusion(rankings)]
