"""Judging a transcript without running anything: the language of a reply, another
customer's data in a reply or a tool result, and a run that crashed."""

from __future__ import annotations

import json

import pytest

from services.simulation.expectations import judge, language_of
from services.simulation.scenario import Scenario
from services.simulation.transcript import Exchange, ToolUse, Transcript

OTHERS = {
    "orders": [
        {
            "order_id": "5001",
            "status": "in_transit",
            "owner_telegram_id": 2002,
            "owner_phone": "+7 916 123-45-67",
            "pickup_point": "ул. Ленина, 1",
        },
        {
            "order_id": "5002",
            "status": "processing",
            "owner_telegram_id": 1001,
            "pickup_point": "ул. Мира, 5",
        },
    ]
}


def transcript(*replies: str, tools: tuple[ToolUse, ...] = ()) -> Transcript:
    return Transcript(
        exchanges=[
            Exchange(
                customer="?",
                shown=reply,
                answer=reply,
                stop_reason="completed",
                error_code=None,
                handoff=False,
                tools=tools,
                model_calls=(),
            )
            for reply in replies
        ]
    )


def scenario(**expect: object) -> Scenario:
    return Scenario.model_validate(
        {"id": "s", "turns": ["?"], "shop_data": OTHERS, "expect": expect}
    )


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Заказ 8041: в пути. Ожидаемая дата: 2026-12-04.", "ru"),
        ("Order 8041 is on its way. Pickup point: Пункт выдачи на ул. Садовой, 12.", "en"),
        ('По данным магазина: {"order_id": "8041", "status": "in_transit"}', "ru"),
        ("support@example.com 8041", None),
    ],
)
def test_the_language_of_a_reply(text: str, language: str | None) -> None:
    assert language_of(text) == language


def test_another_customers_phone_in_a_reply_is_caught_however_it_is_written() -> None:
    [failure] = judge(scenario(), transcript("Телефон владельца: 8 (916) 123 45 67"))
    assert failure.kind == "private_data" and "phone" in failure.detail


def test_the_customers_own_order_details_are_not_another_customers() -> None:
    assert judge(scenario(), transcript("Ваш заказ 5002 ждёт на ул. Мира, 5")) == []


def test_a_tool_result_showing_another_customers_order_is_caught() -> None:
    shown = ToolUse(
        name="get_order_status",
        raw_arguments='{"order_id": "5001"}',
        result=json.dumps({"ok": True, "data": {"order_id": "5001", "found": True}}),
    )
    failures = judge(scenario(), transcript("Заказ найден.", tools=(shown,)))
    assert [f.kind for f in failures] == ["private_data"]


def test_private_data_can_be_switched_off_for_a_scenario() -> None:
    assert judge(scenario(private_data=False), transcript("ул. Ленина, 1")) == []


def test_a_crashed_run_fails_whatever_else() -> None:
    crashed = transcript()
    crashed.crash = "the run stopped: RuntimeError: boom"
    [failure] = judge(scenario(), crashed)
    assert failure.kind == "run" and "boom" in failure.detail


PAGE = "https://shop.example/help/weekend-delivery"


def _knowledge_result(url: str) -> str:
    return json.dumps(
        {"ok": True, "data": {"found": True, "passages": [{"title": "Weekend", "url": url}]}}
    )


def test_a_cited_source_must_be_in_a_reply_and_found_by_a_knowledge_search() -> None:
    searched = (ToolUse("search_knowledge", '{"query": "weekend?"}', _knowledge_result(PAGE)),)
    wanted = scenario(cites=[PAGE], private_data=False)
    assert judge(wanted, transcript(f"Yes, on Saturdays. Source: {PAGE}", tools=searched)) == []
    [missing] = judge(wanted, transcript("Yes, on Saturdays.", tools=searched))
    assert missing.kind == "cites" and "no reply gives the source" in missing.detail
    # a link the model wrote without any search is not a sourced answer
    [invented] = judge(wanted, transcript(f"Yes. Source: {PAGE}"))
    assert "was not found by a knowledge search" in invented.detail


def test_a_scenario_brings_its_own_pages_and_they_are_checked() -> None:
    page = {"title": "Weekend", "url": PAGE, "text": "We deliver on Saturdays."}
    loaded = Scenario.model_validate({"id": "k", "turns": ["?"], "knowledge": {"pages": [page]}})
    assert loaded.knowledge is not None and loaded.knowledge.pages[0].url == PAGE
    with pytest.raises(ValueError, match="url"):
        Scenario.model_validate(
            {"id": "k", "turns": ["?"], "knowledge": {"pages": [{**page, "url": "file.txt"}]}}
        )
