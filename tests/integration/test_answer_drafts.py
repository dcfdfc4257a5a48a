"""Drafts from operators' answers (services/answer_drafts.py): a closed handoff becomes a
question and answer for the admins — masked, whatever the model wrote — and enters the
knowledge only on ✅, once; ✖ discards it; an exchange with nothing general gets none."""

from __future__ import annotations

import pytest

from services.answer_drafts import AnswerDrafter, Drafted, parse_draft
from services.handoff import OPERATOR_PREFIX
from services.llm.types import Message, ToolChoice
from storage.answer_drafts import AnswerDraftRepository
from storage.database import Database
from storage.handoffs import HandoffRepository
from tests.doubles import ScriptedLLM, text_response

CHAT = 4242


class Entries:
    def __init__(self) -> None:
        self.added: list[tuple[str, str]] = []

    async def add_entry(self, title: str, text: str, *, url: str | None = None) -> int:
        self.added.append((title, text))
        return 1


async def _closed_handoff(db: Database, operator_says: str) -> None:
    handoffs = HandoffRepository(db)
    await handoffs.open(CHAT, source="command", reason=None)
    await handoffs.add_history(
        CHAT, role="user", content="Можно забрать заказ 10234 самому? Я Ольга Кузнецова", key="h:1"
    )
    await handoffs.add_history(
        CHAT, role="assistant", content=OPERATOR_PREFIX + operator_says, key="h:2"
    )
    await handoffs.close(CHAT, reason="command")


def _model(reply: str) -> ScriptedLLM:
    def script(messages: list[Message], tool_choice: ToolChoice | None) -> object:
        data = str(messages[-1]["content"])
        assert data.startswith("<support_conversation>")  # the conversation is data
        assert "Shop's person: Да, самовывоз" in data or "Shop's person: Ваш заказ" in data
        return text_response(reply)

    return ScriptedLLM(script)  # type: ignore[arg-type]


# the model did not leave out another customer's data: the draft never shows it
LEAKY = (
    "QUESTION: Можно забрать заказ 10234 самому? Звоните Ольге Кузнецовой +7 912 345-67-89\n"
    "ANSWER: Да, самовывоз с Ленина 5 по будням 10-19; для заказа №10234 звоните +7 912 345-67-89"
    " или пишите olga.k@mail.ru."
)


async def masked_draft(
    db: Database, reply: str, language: str, private: tuple[str, ...]
) -> tuple[Drafted, AnswerDrafter, Entries]:
    """The draft of a closed handoff whose model wrote `reply`: none of `private` shows."""
    await _closed_handoff(db, "Да, самовывоз с Ленина 5 по будням 10-19.")
    entries = Entries()
    drafter = AnswerDrafter(AnswerDraftRepository(db), _model(reply), entries, language=language)
    [draft] = await drafter.draft_closed()
    shown = draft.question + draft.answer
    for part in private:
        assert part not in shown, shown
    return draft, drafter, entries


async def test_a_closed_handoff_gives_a_masked_draft_that_only_a_tick_adds(db: Database) -> None:
    private = ("10234", "912", "345-67-89", "olga.k", "Кузнецов")
    draft, drafter, entries = await masked_draft(db, LEAKY, "ru", private)
    assert "самовывоз" in draft.answer and entries.added == []  # nothing without ✅
    assert await drafter.draft_closed() == []  # one draft per handoff

    assert await drafter.add(draft.id, admin_id=1)
    assert entries.added == [(draft.question, draft.answer)]
    assert not await drafter.add(draft.id, admin_id=2)  # a second ✅ adds nothing
    assert not await drafter.skip(draft.id, admin_id=2)
    assert len(entries.added) == 1


LEAKY_EN = (
    "QUESTION: Can I pick up order #10234 myself? Call Sarah Johnson at (415) 555-0132\n"
    "ANSWER: Yes, pickup at 221 Baker Street on weekdays 10-19; for order 10234 ask for"
    " Mr Johnson, call +1 415 555 0132 or write sarah.j@gmail.com."
)


async def test_an_english_draft_shows_no_other_customers_data(db: Database) -> None:
    private = ("10234", "415", "555", "0132", "sarah.j", "Sarah", "Johnson", "221 Baker")
    draft, _drafter, _entries = await masked_draft(db, LEAKY_EN, "en", private)
    assert "pickup at [address] on weekdays 10-19" in draft.answer


async def test_skip_discards_and_an_edit_adds_the_admins_words(db: Database) -> None:
    await _closed_handoff(db, "Да, самовывоз с Ленина 5 по будням 10-19.")
    entries = Entries()
    drafter = AnswerDrafter(AnswerDraftRepository(db), _model(LEAKY), entries, language="ru")
    [draft] = await drafter.draft_closed()
    assert await drafter.skip(draft.id, admin_id=1)
    assert not await drafter.add(draft.id, admin_id=1)
    assert await drafter.edited(draft.id, 1, "Самовывоз: Ленина 5, будни 10-19.") is None
    assert entries.added == []

    await _closed_handoff(db, "Да, самовывоз с Ленина 5 по будням 10-19.")
    [second] = await drafter.draft_closed()
    question = await drafter.edited(second.id, 1, "Самовывоз: Ленина 5, будни 10-19.")
    assert question == second.question
    assert entries.added == [(second.question, "Самовывоз: Ленина 5, будни 10-19.")]


async def test_nothing_general_gets_no_draft(db: Database) -> None:
    await _closed_handoff(db, "Ваш заказ 10234 передан курьеру сегодня.")
    drafter = AnswerDrafter(AnswerDraftRepository(db), _model("NONE"), Entries(), language="ru")
    assert await drafter.draft_closed() == []
    statuses = await db.fetch_all("SELECT status FROM answer_drafts")
    assert [r[0] for r in statuses] == ["none"]


@pytest.mark.parametrize("reply", ["", "I think the answer is yes", "QUESTION: only"])
def test_another_shape_is_no_draft(reply: str) -> None:
    assert parse_draft(reply, "en") is None
