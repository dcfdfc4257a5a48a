"""The /stats block about the shop's knowledge: how often customers' turns searched it and
how often it had nothing relevant (the misses, kept for the owner's gaps report)."""

from __future__ import annotations

from bot.telegram.stats_view.table import kv, share
from bot.telegram.stats_view.wording import format_int
from bot.telegram.texts import Language
from storage.knowledge_searches import KnowledgeSearchCounts

_WORDS: dict[Language, dict[str, str]] = {
    "ru": {"title": "БАЗА ЗНАНИЙ", "searches": "поисков", "misses": "ничего не нашлось"},
    "en": {"title": "KNOWLEDGE", "searches": "searches", "misses": "nothing found"},
}


def knowledge_block(counts: KnowledgeSearchCounts, language: Language) -> list[str]:
    w = _WORDS[language]
    misses = format_int(counts.misses, language)
    if counts.searches:
        misses = f"{misses}  {share(counts.misses, counts.searches, language)}"
    return [
        kv(w["title"], "", indent=0),
        kv(w["searches"], format_int(counts.searches, language)),
        kv(w["misses"], misses),
    ]
