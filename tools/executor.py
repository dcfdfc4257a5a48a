"""Runs the calls the model proposed — or refuses them — and always answers each one.

The model's output is untrusted: the name must be on the registry's allow-list and the
arguments must pass the tool's pydantic model before any handler runs. Whatever
happens, each call gets a JSON result tied to its call id (so the model can correct
itself or explain the problem) and an audit record (so the operator can see what ran).
Internals never reach the model: a technical failure is logged here with the call id
and the model only learns that the tool is temporarily unavailable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError

from storage.database import StorageRetry
from storage.records import AuditRecord, AuditStatus
from tools.base import (
    ErrorCode,
    LookupResult,
    StorageWait,
    Tool,
    ToolBusinessError,
    ToolCall,
    ToolContext,
    ToolOutcome,
)
from tools.registry import ToolRegistry

log = logging.getLogger(__name__)

UNAVAILABLE_MESSAGE = "The tool is temporarily unavailable. Try again later or tell the customer."
TIMEOUT_MESSAGE = "The tool did not answer in time. Try again later or tell the customer."
_MAX_ECHOED_NAME = 64
_NOT_AN_OBJECT = 'arguments must be a JSON object like {"field": "value"}'
# Arguments of every tool are a few short fields; a longer string is refused unread, so
# parsing and validating one call costs bounded time and memory.
MAX_ARGUMENTS_CHARS = 4096
_TOO_LONG = f"{_NOT_AN_OBJECT}; got more than {MAX_ARGUMENTS_CHARS} characters"
_TOO_DEEP = f"{_NOT_AN_OBJECT}; got values nested too deeply"


def _result_json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _error_json(code: str, message: str) -> str:
    return _result_json({"ok": False, "error": {"code": code, "message": message}})


def audit_record(
    call: ToolCall,
    context: ToolContext,
    *,
    started_at: float,
    duration_ms: float,
    status: AuditStatus,
    error_code: str | None = None,
) -> AuditRecord:
    """The one builder of a tool call's audit row.

    Used here for every outcome, and by the loop for the calls it cut short (deadline,
    cancellation) or did not run again, so every row names the call the same way: the
    proposed name cut to a bounded length (an unknown name is untrusted model output).
    """
    return AuditRecord(
        call_id=call.id,
        tool_name=str(call.name)[:_MAX_ECHOED_NAME],
        user_id=context.caller.key,
        chat_id=context.caller.chat_id,
        turn_id=context.turn_id,
        session_id=context.session_id,
        started_at=started_at,
        duration_ms=max(0.0, duration_ms),
        status=status,
        error_code=None if error_code is None else str(error_code),
    )


def describe_validation_error(error: ValidationError) -> str:
    """Field-level problems the model can act on, e.g. `order_id: must be exactly 4 digits`.

    The rejected values are never echoed (they may be long or hold personal data).
    """
    problems: list[str] = []
    for item in error.errors(include_url=False, include_input=False, include_context=False):
        field = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        kind = item.get("type")
        if kind == "missing":
            text = "required field is missing"
        elif kind == "extra_forbidden":
            text = "unexpected field, remove it"
        else:
            text = str(item.get("msg", "invalid value")).removeprefix("Value error, ")
        problems.append(f"{field}: {text}")
    return "; ".join(problems)


class _Finish:
    """Ends one call: its outcome with its audit record, timed from when it was taken up."""

    def __init__(
        self,
        call: ToolCall,
        context: ToolContext,
        started_at: float,
        monotonic: Callable[[], float],
    ) -> None:
        self._call = call
        self._context = context
        self._started_at = started_at
        self._monotonic = monotonic
        self._started = monotonic()

    def __call__(
        self, content: str, status: AuditStatus, error_code: str | None, *, ok: bool = False
    ) -> ToolOutcome:
        audit = audit_record(
            self._call,
            self._context,
            started_at=self._started_at,
            duration_ms=(self._monotonic() - self._started) * 1000.0,
            status=status,
            error_code=error_code,
        )
        return ToolOutcome(
            call_id=self._call.id,
            tool_name=audit.tool_name,
            content=content,
            ok=ok or status is AuditStatus.SUCCESS,
            audit=audit,
        )

    def error(self, code: str, message: str, status: AuditStatus) -> ToolOutcome:
        return self(_error_json(code, message), status, code)

    def unavailable(self) -> ToolOutcome:
        """A technical failure: the model learns only that the tool is unavailable."""
        return self.error(ErrorCode.UNAVAILABLE, UNAVAILABLE_MESSAGE, AuditStatus.TECHNICAL_ERROR)


class ToolExecutor:
    """Validates, authorises (through each tool's handler and context), runs and audits."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.perf_counter,
        storage_retry: StorageRetry | None = None,
    ) -> None:
        self._registry = registry
        self._storage_retry = storage_retry
        self._wall_clock = wall_clock
        self._monotonic = monotonic

    async def execute_batch(
        self, calls: Sequence[ToolCall], context: ToolContext
    ) -> list[ToolOutcome]:
        """All calls of one model response; outcomes come back in the calls' order.

        Read-only calls are independent, so they run concurrently. If any call names a
        tool that changes data, the whole batch runs one call at a time in order, so
        later calls see the effects of earlier ones. A failing call never affects the
        others: each gets its own outcome.
        """
        if not calls:
            return []
        if all(self._is_read_only(call) for call in calls):
            return list(await asyncio.gather(*(self.execute(call, context) for call in calls)))
        return [await self.execute(call, context) for call in calls]

    def _is_read_only(self, call: ToolCall) -> bool:
        tool = self._registry.get(call.name)
        # an unknown tool never runs, so it cannot change anything
        return tool is None or tool.read_only

    async def execute(self, call: ToolCall, context: ToolContext) -> ToolOutcome:
        """One call. Never raises for anything the model caused (only cancellation).

        Steps: the tool on the allow-list, its arguments valid, the handler run within
        its timeout, its result checked and serialised; each step may end the call with
        an outcome the model can act on, always with its audit record."""
        finish = _Finish(call, context, self._wall_clock(), self._monotonic)
        tool = self._registry.get(call.name)
        if tool is None:
            return finish.error(ErrorCode.UNKNOWN_TOOL, self._unknown(call), AuditStatus.REJECTED)
        arguments, problem = self._parse_arguments(tool, call.arguments)
        if arguments is None:
            return finish.error(ErrorCode.INVALID_ARGUMENTS, problem, AuditStatus.REJECTED)
        result = await self._run(tool, call, arguments, context, finish)
        if isinstance(result, ToolOutcome):
            return result
        return self._answer(tool, call, result, finish)

    def _unknown(self, call: ToolCall) -> str:
        """What the model is told of a name not on the allow-list: the names that are
        (the model can correct itself), its own name cut short (never echoed whole)."""
        allowed = ", ".join(self._registry.names) or "none"
        shown = str(call.name)[:_MAX_ECHOED_NAME]
        return f"Unknown tool '{shown}'. Allowed tools: {allowed}."

    async def _run(
        self,
        tool: Tool[Any, Any],
        call: ToolCall,
        arguments: BaseModel,
        context: ToolContext,
        finish: _Finish,
    ) -> object:
        """The handler's result, or the outcome of its failure: a business error is the
        model's to explain, a timeout or a crash is only "unavailable" (logged here)."""
        timeout = asyncio.timeout(tool.timeout_s)
        try:
            async with timeout:
                # the handler's waits for the store pause its timeout (`StorageWait`)
                wait = StorageWait(retry=self._storage_retry, deadline=timeout)
                return await tool.handler(arguments, replace(context, storage_wait=wait))
        except ToolBusinessError as exc:
            return finish.error(exc.code, exc.message, AuditStatus.BUSINESS_ERROR)
        except TimeoutError:
            if timeout.expired():
                log.warning(
                    "tool %s call %s timed out after %ss", tool.name, call.id, tool.timeout_s
                )
                return finish.error(ErrorCode.TIMEOUT, TIMEOUT_MESSAGE, AuditStatus.TIMEOUT)
            log.exception("tool %s call %s failed", tool.name, call.id)
            return finish.unavailable()
        except Exception:
            log.exception("tool %s call %s failed", tool.name, call.id)
            return finish.unavailable()

    @staticmethod
    def _answer(
        tool: Tool[Any, Any], call: ToolCall, result: object, finish: _Finish
    ) -> ToolOutcome:
        """The result as the model reads it, if it is what the tool declares and can be
        written as JSON (otherwise the tool is broken: "unavailable", logged)."""
        if not isinstance(result, tool.result_model):
            log.error(
                "tool %s call %s returned %s instead of %s",
                tool.name,
                call.id,
                type(result).__name__,
                tool.result_model.__name__,
            )
            return finish.unavailable()
        try:
            # no nulls: a field the tool could not fill tells the model nothing
            data = result.model_dump(mode="json", exclude_none=True)
            content = _result_json({"ok": True, "data": data})
        except Exception:
            log.exception("tool %s call %s returned an unserialisable result", tool.name, call.id)
            return finish.unavailable()
        if isinstance(result, LookupResult) and result.found_nothing():
            # an ordinary result for the model; for the audit, the shop's data said no
            return finish(content, AuditStatus.BUSINESS_ERROR, ErrorCode.NOT_FOUND, ok=True)
        return finish(content, AuditStatus.SUCCESS, None)

    @staticmethod
    def _parse_arguments(tool: Tool[Any, Any], raw: object) -> tuple[BaseModel | None, str]:
        """The validated arguments, or None and a problem the model can act on.

        Hostile shapes are answered like any other invalid arguments: a string longer
        than `MAX_ARGUMENTS_CHARS` is not parsed at all, and nesting deep enough to
        exhaust the recursion limit of the JSON parser or of validation (RecursionError
        is not a ValueError) is reported as such, so the turn goes on.
        """
        if not isinstance(raw, str):
            return None, _NOT_AN_OBJECT
        if len(raw) > MAX_ARGUMENTS_CHARS:
            return None, _TOO_LONG
        try:
            decoded = json.loads(raw)
        except RecursionError:
            return None, _TOO_DEEP
        except ValueError:
            return None, f"{_NOT_AN_OBJECT}; got text that is not valid JSON"
        if not isinstance(decoded, dict):
            return None, _NOT_AN_OBJECT
        try:
            return tool.arguments_model.model_validate(decoded), ""
        except RecursionError:
            return None, _TOO_DEEP
        except ValidationError as exc:
            return None, describe_validation_error(exc)
