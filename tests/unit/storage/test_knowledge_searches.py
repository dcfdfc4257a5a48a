"""`KnowledgeSearchLog` on both backends: customers' knowledge searches counted for /stats
in the period asked (what the bot could not answer is /gaps', from the turns' outcomes)."""

from __future__ import annotations

from bot.telegram.stats_view.knowledge import knowledge_block
from storage.database import Database
from storage.knowledge_searches import KnowledgeSearchCounts, KnowledgeSearchLog


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_searches_and_misses_are_counted_in_the_period(db: Database) -> None:
    clock = Clock()
    log = KnowledgeSearchLog(db, clock=clock)
    for at, query, found, best in [
        (999.0, "before the period", 0, None),
        (1000.0, "доставка в субботу", 2, "https://shop.example/dostavka-vyhodnye.html"),
        (1200.0, "do you sell sofas?", 0, None),
        (1300.0, "номер телефона", 1, "https://shop.example/kontakty.html"),
        (1400.0, "сколько стоит биткоин", 0, None),
        (2000.0, "at the upper bound", 0, None),
    ]:
        clock.now = at
        await log.record(query, found, best, chat_id=42, turn_id=f"t{int(at)}")
    counts = await log.counts(1000.0, 2000.0)
    assert counts == KnowledgeSearchCounts(searches=4, misses=2)
    assert (await log.counts()).searches == 6


def test_the_stats_block_shows_searches_and_the_share_of_misses() -> None:
    ru = knowledge_block(KnowledgeSearchCounts(searches=40, misses=10), "ru")
    assert ru[0].startswith("БАЗА ЗНАНИЙ")
    assert ru[1].split()[-1] == "40" and ru[2].split()[-2:] == ["10", "25%"]
    en = knowledge_block(KnowledgeSearchCounts(searches=0, misses=0), "en")
    assert en[2].split()[-1] == "0" and "%" not in en[2]
