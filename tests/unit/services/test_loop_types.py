"""The one builder of usage rows: what a model call leaves in `llm_calls`."""

from __future__ import annotations

from services.llm.types import LLMResponse
from services.loop_types import model_call_record


def _response(**changes: object) -> LLMResponse:
    values: dict[str, object] = {
        "text": "hi",
        "refusal": None,
        "tool_calls": (),
        "model": "backup",
        "finish_reason": "stop",
        "prompt_tokens": 10,
        "completion_tokens": None,
        "total_tokens": None,
        "response_id": "resp-1",
        "requested_model": "primary",
    }
    values.update(changes)
    return LLMResponse(**values)  # type: ignore[arg-type]


def test_an_answered_call_takes_its_figures_from_the_response() -> None:
    record = model_call_record(
        "chat", requested_model="configured", started_at=5.0, latency_ms=7.0, response=_response()
    )
    assert (record.purpose, record.status, record.error_code) == ("chat", "ok", None)
    assert (record.requested_model, record.model, record.fallback) == ("primary", "backup", True)
    assert (record.prompt_tokens, record.completion_tokens, record.total_tokens) == (10, None, None)
    assert (record.finish_reason, record.response_id) == ("stop", "resp-1")
    assert (record.started_at, record.latency_ms) == (5.0, 7.0)


def test_the_configured_model_stands_in_when_the_response_does_not_name_one() -> None:
    record = model_call_record(
        "summary",
        requested_model="configured",
        started_at=5.0,
        latency_ms=7.0,
        response=_response(requested_model=None, model="configured"),
    )
    assert (record.requested_model, record.fallback) == ("configured", False)


def test_a_failed_call_knows_only_what_was_asked_and_why_it_failed() -> None:
    record = model_call_record(
        "chat", requested_model="configured", started_at=5.0, latency_ms=7.0, error_code="timeout"
    )
    assert (record.status, record.error_code, record.model) == ("error", "timeout", None)
    assert record.prompt_tokens is None and record.response_id is None and not record.fallback


def test_a_response_with_an_error_code_is_an_error_that_keeps_its_usage() -> None:
    record = model_call_record(
        "summary",
        requested_model="configured",
        started_at=5.0,
        latency_ms=7.0,
        response=_response(text=""),
        error_code="empty_summary",
    )
    assert (record.status, record.error_code) == ("error", "empty_summary")
    assert record.prompt_tokens == 10
