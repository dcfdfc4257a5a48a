"""The outcome of a question from what its turn did (services/outcomes.py)."""

from __future__ import annotations

import pytest

from services.outcomes import Outcome, classify, says_dont_know
from services.similar import group_questions, same_question
from storage.records import AuditRecord, AuditStatus
from tools.base import ActionProposed, HandoffRequested


def _audit(tool: str, status: AuditStatus, code: str | None = None) -> AuditRecord:
    return AuditRecord(
        call_id="c1",
        tool_name=tool,
        user_id=1,
        chat_id=1,
        turn_id=None,
        session_id=None,
        started_at=0.0,
        duration_ms=1.0,
        status=status,
        error_code=code,
    )


OK = AuditStatus.SUCCESS
NO = AuditStatus.BUSINESS_ERROR


@pytest.mark.parametrize(
    ("audits", "answer", "expected", "tools"),
    [
        ([], "Здравствуйте! Чем помочь?", Outcome.NO_FACTS, ()),
        ([], "Hello! How can I help?", Outcome.NO_FACTS, ()),
        ([], "К сожалению, я не знаю, есть ли гравировка.", Outcome.DONT_KNOW, ()),
        ([], "I'm not sure we ship there.", Outcome.DONT_KNOW, ()),
        ([], "I don't have information about gift wrapping.", Outcome.DONT_KNOW, ()),
        ([_audit("get_shop_info", NO, "not_found")], "Contact us.", Outcome.DONT_KNOW, ()),
        ([_audit("search_knowledge", NO, "not_found")], "…", Outcome.DONT_KNOW, ()),
        ([_audit("get_shop_info", OK)], "Доставка 300 ₽.", Outcome.FACTS, ("get_shop_info",)),
        # the shop's data saying "no such order" is still an answer from facts
        (
            [_audit("get_order_status", NO, "not_found")],
            "Нет такого.",
            Outcome.FACTS,
            ("get_order_status",),
        ),
        (
            [_audit("get_order_status", OK), _audit("get_shop_info", NO, "not_found")],
            "Заказ в пути, а про упаковку я не знаю.",
            Outcome.DONT_KNOW,
            (),
        ),
        (
            [_audit("get_order_status", OK), _audit("get_order_status", OK)],
            "В пути.",
            Outcome.FACTS,
            ("get_order_status",),
        ),
        # a failed lookup is not a fact
        (
            [_audit("get_order_status", AuditStatus.TIMEOUT)],
            "Попробуйте позже.",
            Outcome.NO_FACTS,
            (),
        ),
    ],
)
def test_outcome_from_what_the_turn_did(
    audits: list[AuditRecord], answer: str, expected: Outcome, tools: tuple[str, ...]
) -> None:
    got = classify(audits=audits, notes=(), answer=answer, stop_reason="completed")
    assert (got.outcome, got.fact_tools) == (expected, tools)


def test_handoff_action_declined_and_failed_come_first() -> None:
    facts = [_audit("get_order_status", OK)]
    handoff = classify(
        audits=facts, notes=[HandoffRequested(1, "r")], answer="x", stop_reason="completed"
    )
    assert handoff.outcome is Outcome.HANDOFF
    action = classify(
        audits=facts, notes=[ActionProposed("op", {})], answer="x", stop_reason="completed"
    )
    assert action.outcome is Outcome.ACTION
    assert classify(audits=facts, notes=(), answer=None, stop_reason="withheld").outcome is (
        Outcome.DECLINED
    )
    assert classify(audits=facts, notes=(), answer=None, stop_reason=None, failed=True).outcome is (
        Outcome.FAILED
    )


@pytest.mark.parametrize(
    "text",
    ["Доставка бесплатная от 3000 ₽.", "I know the answer: 3 days.", "Знаю! Завтра привезём."],
)
def test_an_answer_with_content_is_not_dont_know(text: str) -> None:
    assert not says_dont_know(text)


def test_the_same_question_in_other_words() -> None:
    assert same_question("Где мой заказ 8041?", "где заказ 8041???")
    assert same_question("Do you deliver on weekends?", "deliveries on the weekend?")
    assert not same_question("Где мой заказ?", "Сколько стоит доставка в Казань?")
    assert same_question("Привет", "привет!")
    assert not same_question("Привет", "Добрый день")


def test_groups_largest_first() -> None:
    questions = [
        "Есть подарочная упаковка?",
        "Можно оплатить биткоином?",
        "подарочная упаковка есть?",
        "А подарочную упаковку делаете?",
        "Оплата биткоином возможна?",
        "Работаете в воскресенье?",
    ]
    groups = group_questions(questions, lambda q: q)
    assert [len(g.members) for g in groups] == [3, 2, 1]
    assert groups[0].lead == "Есть подарочная упаковка?"
