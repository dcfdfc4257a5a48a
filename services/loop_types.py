"""What one bounded tool loop produced, and how it can fail.

Shared by the loop (which fills it), the chat service (which stores it) and the bot
(which turns a failure into a polite message). A failed loop still carries the records
it made, so started tool calls and model calls keep their audit rows. The row types
themselves live in `storage.records`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from services.llm.types import LLMResponse
from services.offers import Offer
from storage.records import AuditRecord, ModelCallRecord

# error codes meaning "the model is not available right now" (loop and LLM client codes):
# the customer is asked to try again in a minute, /stats says the AI service did not answer
UNAVAILABLE_CODES = frozenset(
    {"rate_limited", "timeout", "unavailable", "turn_timeout", "authentication"}
)


class StopReason(StrEnum):
    COMPLETED = "completed"  # the model answered with text
    TRUNCATED = "truncated"  # finish_reason == "length" with text
    REFUSED = "refused"  # refusal or content_filter: the bot sends its own polite text
    STOPPED = "stopped"  # the customer pressed stop: the text so far (maybe none) is the answer


def model_call_record(
    purpose: str,
    *,
    requested_model: str,
    started_at: float,
    latency_ms: float,
    response: LLMResponse | None = None,
    error_code: str | None = None,
) -> ModelCallRecord:
    """The one builder of a model call's usage row (the loop's and the summarizer's).

    `requested_model` is the configured model, used when the response does not name the
    one it was asked for; without a response (the call failed) nothing else is known.
    A call is "ok" unless it has an error code, even when a response came back.
    """
    if response is None:
        return ModelCallRecord(
            purpose=purpose,
            requested_model=requested_model,
            model=None,
            started_at=started_at,
            latency_ms=latency_ms,
            status="error" if error_code is not None else "ok",
            error_code=error_code,
        )
    return ModelCallRecord(
        purpose=purpose,
        requested_model=response.requested_model or requested_model,
        model=response.model,
        started_at=started_at,
        latency_ms=latency_ms,
        status="error" if error_code is not None else "ok",
        error_code=error_code,
        finish_reason=response.finish_reason,
        prompt_tokens=response.prompt_tokens,
        completion_tokens=response.completion_tokens,
        total_tokens=response.total_tokens,
        cached_tokens=response.cached_tokens,
        response_id=response.response_id,
    )


@dataclass(slots=True)
class LoopTrace:
    """Everything recorded so far in one turn; kept even when the turn fails."""

    model_steps: int = 0
    tool_names: list[str] = field(default_factory=list)
    audit_records: list[AuditRecord] = field(default_factory=list)
    model_calls: list[ModelCallRecord] = field(default_factory=list)
    response_ids: list[str] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cached_tokens: int | None = None  # None unless every response reported them
    language_retries: int = 0  # answers asked again in the customer's language (0 or 1)


@dataclass(frozen=True, slots=True)
class LoopResult:
    text: str
    stop_reason: StopReason
    trace: LoopTrace
    prompt_ref: str  # "<prompt id>@<version>"

    @property
    def model_steps(self) -> int:
        return self.trace.model_steps

    @property
    def tool_names(self) -> list[str]:
        return self.trace.tool_names


class TurnError(Exception):
    """A turn that could not produce an answer; `code` is stored and drives the reply."""

    code = "error"

    def __init__(self, message: str, *, trace: LoopTrace | None = None) -> None:
        super().__init__(message)
        self.trace = trace or LoopTrace()


class TurnUnavailable(TurnError):
    """The model could not be reached or refused service (429, 5xx, timeouts, auth)."""

    code = "unavailable"

    def __init__(self, message: str, *, code: str = "unavailable", trace: LoopTrace | None = None):
        super().__init__(message, trace=trace)
        self.code = code


class TurnTimeout(TurnError):
    """The whole turn exceeded TURN_TIMEOUT_S; in-flight work was cancelled."""

    code = "turn_timeout"


class ProtocolError(TurnError):
    """The model answered in a way the loop cannot accept (e.g. empty text, tools on last step)."""

    code = "protocol_error"


@dataclass(frozen=True, slots=True)
class TurnReply:
    """What the chat service hands back to the Telegram layer for one customer message.

    `text` is the model's answer when `error_code` is None and the stop reason is not
    `refused`; otherwise the bot picks its own polite text from `error_code` /
    `stop_reason`, so nothing internal reaches the customer. `offers`: what the turn
    offers besides its text (services/offers.py), shown by the bot (bot/telegram/turn_view.py);
    stored with the turn, so a replay carries the same ones.
    """

    turn_id: str
    text: str | None
    stop_reason: StopReason | None
    error_code: str | None = None
    offers: tuple[Offer, ...] = ()

    @property
    def answered(self) -> bool:
        return self.error_code is None and self.stop_reason is not StopReason.REFUSED
