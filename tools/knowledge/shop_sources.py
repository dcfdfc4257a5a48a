"""The knowledge the shop already has: its imported FAQ, and the demo shop's pages.

The FAQ is one source among the others (`faq`): each entry one passage, its topic the
heading, its answer the text, its aliases among the indexed words, with the weight of
the shop's exact answers. It mirrors the FAQ table: `sync_shop_sources` compares a hash
of the whole FAQ and rebuilds the source only when it changed (an import, the demo
removed), so it is cheap to call often. The demo shop gets a few demo pages beside its
demo FAQ (`demo`), removed with the rest of the demo.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable

from storage.knowledge import DocumentDraft
from storage.shop import ShopRepository
from storage.shop_records import FaqRecord
from tools.knowledge.base import FAQ_LOCATION_PREFIX, KnowledgeBase, content_hash
from tools.knowledge.text import stems

FAQ_SOURCE = "faq"
FAQ_TITLE = "FAQ"
DEMO_SOURCE = "demo"
DEMO_TITLE = "Demo shop pages"

# (title, url, heading, text): what a small shop's help pages say
DEMO_PAGES: tuple[tuple[str, str, str, str], ...] = (
    (
        "Размеры одежды",
        "https://demo-shop.example/help/sizes",
        "Как подобрать размер",
        "Измерьте обхват груди и талии сантиметровой лентой и сравните с таблицей: "
        "S — грудь 86–90 см, M — 91–96 см, L — 97–102 см, XL — 103–108 см. Если вы между "
        "двумя размерами, берите больший.",
    ),
    (
        "Уход за вещами",
        "https://demo-shop.example/help/care",
        "Стирка и уход",
        "Хлопок стирайте при 30 °C наизнанку, не отбеливайте и не сушите в барабане. "
        "Шерсть — только ручная стирка или деликатный режим, сушить горизонтально.",
    ),
    (
        "Gift cards",
        "https://demo-shop.example/help/gift-cards",
        "Gift cards",
        "Gift cards of 1000, 3000 and 5000 roubles are valid for one year and can be used "
        "online or in the pickup point. A gift card cannot be exchanged for cash.",
    ),
)


async def sync_shop_sources(knowledge: KnowledgeBase, shop: ShopRepository, *, now: float) -> bool:
    """Bring the FAQ source in line with the FAQ, and the demo pages with the demo shop
    (present while it is); whether anything changed."""
    changed = await _sync_faq(knowledge, await shop.faq_entries(), now=now)
    demo = await shop.holds_demo()
    present = await knowledge.repo.source(DEMO_SOURCE)
    if demo and present is None:
        await _add_demo_pages(knowledge, now=now)
        changed = True
    elif not demo and present is not None:
        await knowledge.repo.remove_demo()
        changed = True
    return changed


def _faq_document_hash(entry: FaqRecord) -> str:
    data = [entry.topic, entry.answer, sorted(entry.aliases)]
    return content_hash(json.dumps(data, ensure_ascii=False).encode())


async def _sync_faq(knowledge: KnowledgeBase, entries: list[FaqRecord], *, now: float) -> bool:
    repo = knowledge.repo
    wanted = {f"{FAQ_LOCATION_PREFIX}{e.key}": _faq_document_hash(e) for e in entries}
    source = await repo.source(FAQ_SOURCE)
    if source is None and not entries:
        return False
    source_id = await repo.ensure_source("faq", FAQ_SOURCE, FAQ_TITLE, now=now)
    stored = await repo.document_states(source_id)
    if {loc: state.content_hash for loc, state in stored.items()} == wanted:
        return False  # unchanged: not processed again
    changed = [
        e
        for e in entries
        if stored.get(_location(e)) is None
        or stored[_location(e)].content_hash != wanted[_location(e)]
    ]
    drafts = await knowledge.passages_of([(e.topic, e.answer) for e in changed], priority=1)
    documents = [
        DocumentDraft(
            location=_location(entry),
            title=entry.topic,
            content_hash=wanted[_location(entry)],
            # the aliases the shop listed are indexed words too
            passages=[
                dataclasses.replace(
                    draft, stems=" ".join([draft.stems, *stems(" ".join(entry.aliases))])
                )
            ],
        )
        for entry, draft in zip(changed, drafts, strict=True)
    ]
    await repo.apply(source_id, documents, now=now, keep=wanted.keys())
    return True


def _location(entry: FaqRecord) -> str:
    return f"{FAQ_LOCATION_PREFIX}{entry.key}"


async def _add_demo_pages(knowledge: KnowledgeBase, *, now: float) -> None:
    repo = knowledge.repo
    source_id = await repo.ensure_source("demo", DEMO_SOURCE, DEMO_TITLE, now=now, demo=True)
    drafts = await knowledge.passages_of([(heading, text) for _, _, heading, text in DEMO_PAGES])
    documents = [
        DocumentDraft(
            location=url,
            title=title,
            content_hash=content_hash(text.encode()),
            passages=[draft],
        )
        for (title, url, _, text), draft in zip(DEMO_PAGES, drafts, strict=True)
    ]
    await repo.apply(source_id, documents, now=now, keep=())


class ShopSourcesRefresh:
    """`sync_shop_sources` at most once per `every_s` (and never twice at once): the
    search tool calls it before searching, so an import, a removed demo or a simulation's
    own FAQ is searchable without anyone else keeping the two in step."""

    def __init__(
        self, knowledge: KnowledgeBase, *, every_s: float = 30.0, clock: Callable[[], float]
    ) -> None:
        self._knowledge = knowledge
        self._every_s = every_s
        self._clock = clock
        self._last: float | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, shop: ShopRepository) -> None:
        now = self._clock()
        if self._last is not None and now - self._last < self._every_s:
            return
        async with self._lock:
            if self._last is not None and self._clock() - self._last < self._every_s:
                return
            await sync_shop_sources(self._knowledge, shop, now=now)
            self._last = self._clock()
