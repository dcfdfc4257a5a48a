"""What the customer reads for each kind of turn outcome: never anything internal."""

from __future__ import annotations

import pytest

from bot.telegram.replies import customer_text
from bot.telegram.texts import EN, RU
from services.loop_types import StopReason, TurnReply


@pytest.mark.parametrize(
    "code", ["rate_limited", "timeout", "unavailable", "turn_timeout", "authentication"]
)
def test_model_unavailable_asks_to_try_again_in_a_minute(code: str) -> None:
    reply = TurnReply(turn_id="t", text=None, stop_reason=None, error_code=code)
    assert customer_text(reply, RU) == RU.temporarily_unavailable
    assert customer_text(reply, EN) == EN.temporarily_unavailable


@pytest.mark.parametrize("code", ["protocol_error", "internal_error", "request_rejected", "x"])
def test_other_failures_get_a_short_apology(code: str) -> None:
    reply = TurnReply(turn_id="t", text="stack trace here", stop_reason=None, error_code=code)
    assert customer_text(reply, RU) == RU.apology


def test_refusal_gets_our_polite_text_not_the_models() -> None:
    reply = TurnReply(turn_id="t", text="I refuse: policy 7", stop_reason=StopReason.REFUSED)
    assert customer_text(reply, EN) == EN.refused


def test_normal_answer_passes_through() -> None:
    reply = TurnReply(turn_id="t", text="Заказ 8041 в пути.", stop_reason=StopReason.COMPLETED)
    assert customer_text(reply, RU) == "Заказ 8041 в пути."
    empty = TurnReply(turn_id="t", text="  ", stop_reason=StopReason.COMPLETED)
    assert customer_text(empty, RU) == RU.apology


def test_an_answer_the_output_cap_cut_short_says_so_in_the_customers_language() -> None:
    reply = TurnReply(
        turn_id="t", text="Доставка курьером, самовывоз и", stop_reason=StopReason.TRUNCATED
    )
    assert customer_text(reply, RU) == f"Доставка курьером, самовывоз и…\n\n{RU.cut_short}"
    assert customer_text(reply, EN).endswith(EN.cut_short)
