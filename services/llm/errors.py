"""The LLM client's own errors; SDK exceptions are translated into these at the boundary."""

from __future__ import annotations


class LLMError(Exception):
    """Base class; `code` is stable and safe to store and to show in /stats."""

    code = "llm_error"

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(message)
        self.model = model


class LLMRateLimited(LLMError):
    code = "rate_limited"


class LLMTimeout(LLMError):
    code = "timeout"


class LLMUnavailable(LLMError):
    code = "unavailable"


class LLMRequestRejected(LLMError):
    code = "request_rejected"


class LLMAuthenticationError(LLMError):
    code = "authentication"


class LLMModelNotFound(LLMRequestRejected):
    """The endpoint says it has no such model (HTTP 404, or the error code
    `model_not_found`): asking again will not help."""

    code = "model_not_found"
