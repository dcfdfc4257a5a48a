"""`ChatModel` over the official `AsyncOpenAI` client, with a fallback chain of models.

This is the only module that imports `openai`. SDK exceptions are translated into
`services.llm.errors` here, so the loop and the chat service never depend on the SDK.
The SDK's own retries (`max_retries`) run first for each model; when a model still
fails with something another model might not hit (429, 5xx, timeout, connection
error), the same request goes to the next model of `fallback_models`, in order.

Two choices keep a request cheap in CPU (measured in bench/, see docs/benchmarks.md):
- The request goes through the client's own `post("/chat/completions", body=...)`, the
  call `chat.completions.create()` makes after preparing its arguments, with the whole
  body (model, conversation, tool schemas, tool options) as the JSON body. `create()`
  first walks every typed argument recursively against its TypedDict annotations to
  rename aliased keys; chat-completion fields have none, so the walk changes nothing,
  yet it cost about 3-8 ms of CPU per request — the largest single cost of a bot turn.
  Skipping only that walk keeps everything else of the SDK: the same request options
  (`json_data` is the real body, so the SDK's option hooks, retries and HTTP event
  hooks all see the real conversation), bearer auth, timeouts, retries, error types and
  `ChatCompletion` parsing. Wrappers of `create()` itself (a test double, a tracing
  library patching it) do not see these calls: they see nothing rather than a
  conversation that is not the one sent.
- HTTP goes through the SDK's aiohttp transport (`DefaultAioHttpClient`; aiohttp is
  already installed for aiogram). The default httpx pool scans every pooled
  connection on each request, which grows with the number of concurrent model calls.
  If the installed SDK has no aiohttp transport, the default client is used.

Streaming (`stream_complete`, used for the steps whose text the customer may watch
being written): the same body with `stream: true` and `stream_options.include_usage`,
posted the same way and read as server-sent events, each chunk kept as its parsed JSON
(not a typed `ChatCompletionChunk`: that is a pydantic model built for every token).
Text deltas are joined and handed to a listener as they come; tool-call deltas are
assembled by their `index` (id and name from the first delta, arguments concatenated);
the usage comes from the final chunk (empty `choices`) where the provider sends it, else
stays unknown. A provider that rejects the streamed request (HTTP 400 or 422: some do
not stream, some reject `stream_options`) is asked again without streaming; if that
works, streaming is off for the rest of the process (one WARNING). The assembled answer
is the same `LLMResponse` a non-streamed request gives; provider-specific extras of the
assistant message (reasoning fields) are not rebuilt from a stream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import openai
from openai import AsyncOpenAI, AsyncStream, RequestOptions
from openai.types.chat import ChatCompletion

from services.llm.errors import (
    LLMAuthenticationError,
    LLMError,
    LLMModelNotFound,
    LLMRateLimited,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
)
from services.llm.types import LLMResponse, Message, ModelCheck, StepListener, ToolChoice
from tools.base import ToolCall

log = logging.getLogger(__name__)

# Errors another model (or provider behind a gateway) may not have: worth a fallback.
_FALLBACK_ERRORS: tuple[type[LLMError], ...] = (LLMRateLimited, LLMTimeout, LLMUnavailable)

# The path `chat.completions.create()` posts to.
_COMPLETIONS_PATH = "/chat/completions"

# Response-only fields of an assistant message that requests must not carry back.
_RESPONSE_ONLY_FIELDS = ("annotations", "audio", "function_call")


class OpenAIChatModel:
    """Chat Completions through `AsyncOpenAI`; answers `LLMResponse` or raises `LLMError`."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        fallback_models: Sequence[str] = (),
        timeout_s: float = 30.0,
        max_retries: int = 1,
        answer_max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> None:
        """`answer_max_tokens` caps each chat step (`max_completion_tokens`): a model that
        runs on cannot write an answer of hundreds of messages; None sends no cap. Another
        endpoint than OpenAI's gets the cap as `max_tokens` too: llama.cpp's server (and
        other local servers) read only that one and would otherwise generate until the
        context is full. `temperature` is sent on every call (chat steps and summaries);
        None sends none, and the endpoint samples at its own default (llama.cpp: 0.8)."""
        if not model:
            raise ValueError("model must not be empty")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self._model = model
        self._answer_max_tokens = answer_max_tokens
        self._sampling = {} if temperature is None else {"temperature": temperature}
        self._cap_names = _cap_names(base_url)
        self._streaming = True  # until a provider refuses a streamed request
        self._chain: tuple[str, ...] = (model, *(m for m in fallback_models if m and m != model))
        self._client = AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=max_retries,
            http_client=_aiohttp_client(timeout_s),
        )

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def models(self) -> tuple[str, ...]:
        """The primary model followed by the fallbacks, in the order they are tried."""
        return self._chain

    @property
    def streaming(self) -> bool:
        """False once a provider refused a streamed request (then every step is whole)."""
        return self._streaming

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> LLMResponse:
        params = _chat_params(messages, tools, tool_choice, parallel_tool_calls)
        return await self._create_with_fallback(self._capped(params))

    async def stream_complete(
        self,
        messages: Sequence[Message],
        *,
        listener: StepListener,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> LLMResponse:
        """Like `complete`, streamed: `listener` sees the text as it is generated."""
        params = _chat_params(messages, tools, tool_choice, parallel_tool_calls)
        return await self._create_with_fallback(self._capped(params), listener=listener)

    def _capped(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._answer_max_tokens is not None:
            params.update(dict.fromkeys(self._cap_names, self._answer_max_tokens))
        params.update(self._sampling)
        return params

    async def complete_text(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> LLMResponse:
        params: dict[str, Any] = {"messages": list(messages), **self._sampling}
        if max_tokens is not None:
            params.update(dict.fromkeys(self._cap_names, max_tokens))
        return await self._create_with_fallback(params)

    async def check(self) -> ModelCheck:
        """One free start-up check: `GET /models` (no tokens are used, nothing is billed).

        Returns which of `models` (the primary first, then the fallbacks) the endpoint
        does not offer, or `listed=False` when it does not list its models at all (some
        local servers and gateways answer 404): then nothing could be checked. A rejected
        key raises `LLMAuthenticationError`; an endpoint that cannot be reached, times out,
        is rate limited or answers 5xx raises `LLMUnavailable` / `LLMTimeout` /
        `LLMRateLimited` — worth asking again later.
        """
        try:
            offered = {model.id async for model in self._client.models.list()}
        except (openai.APIResponseValidationError, ValueError):  # not JSON, or not a list
            return ModelCheck(listed=False, detail="GET /models sent an unreadable answer")
        except openai.APIStatusError as error:
            status = error.status_code
            if status in (401, 403, 408, 429) or status >= 500:
                raise _translate(error, self._model) from error
            return ModelCheck(listed=False, detail=f"GET /models answered HTTP {status}")
        except openai.APIError as error:
            raise _translate(error, self._model) from error
        missing = tuple(name for name in self._chain if not _offered(name, offered))
        return ModelCheck(listed=True, missing=missing)

    async def transcribe(self, audio: bytes, *, filename: str, model: str) -> str:
        """The text heard in `audio` (`POST /audio/transcriptions`, multipart), on the same
        endpoint and key as the chat model; `filename`'s extension names the format.

        Raises `LLMModelNotFound` when the endpoint has no such model (or no such
        endpoint: HTTP 404), other `LLMError`s as `complete()` does. The audio is sent
        from memory and never logged.
        """
        try:
            result = await self._client.audio.transcriptions.create(
                model=model, file=(filename, audio), response_format="json"
            )
        except openai.APIStatusError as error:
            if error.status_code == 404 or getattr(error, "code", None) == "model_not_found":
                detail = f"model {model}: HTTP {error.status_code} (no such model)"
                raise LLMModelNotFound(detail, model=model) from error
            raise _translate(error, model) from error
        except openai.APIError as error:
            raise _translate(error, model) from error
        except openai.OpenAIError as error:
            raise LLMError(f"LLM client error ({type(error).__name__})", model=model) from error
        return str(getattr(result, "text", "") or "")

    async def aclose(self) -> None:
        await self._client.close()

    async def _create_with_fallback(
        self, params: dict[str, Any], *, listener: StepListener | None = None
    ) -> LLMResponse:
        started = time.perf_counter()
        last_error: LLMError | None = None
        for index, model in enumerate(self._chain):
            try:
                if listener is not None and self._streaming:
                    assembled = await self._stream_or_whole(model, params, listener)
                    if isinstance(assembled, _StreamAssembly):
                        latency_ms = (time.perf_counter() - started) * 1000
                        return assembled.response(
                            model=model, requested=self._model, latency=latency_ms
                        )
                    completion = assembled
                else:
                    completion = await self._create(model, params)
                latency_ms = (time.perf_counter() - started) * 1000
                return _to_response(
                    completion, model=model, requested=self._model, latency=latency_ms
                )
            except _FALLBACK_ERRORS as error:
                last_error = error
                if index + 1 < len(self._chain):
                    log.warning(
                        "model %s failed (%s); falling back to %s",
                        model,
                        error.code,
                        self._chain[index + 1],
                    )
        assert last_error is not None  # the chain is never empty
        raise last_error

    async def _create(self, model: str, params: dict[str, Any]) -> ChatCompletion:
        """One request to one model, exactly as `create()` would send it (without its walk
        over the typed arguments, see the module docstring)."""
        body: dict[str, Any] = {"model": model, **params}
        try:
            return await self._client.post(
                _COMPLETIONS_PATH, body=body, cast_to=ChatCompletion, options=_request_options()
            )
        except openai.APIError as error:
            raise _translate(error, model) from error
        except openai.OpenAIError as error:  # e.g. a client-side configuration problem
            raise LLMError(f"LLM client error ({type(error).__name__})", model=model) from error

    async def _stream_or_whole(
        self, model: str, params: dict[str, Any], listener: StepListener
    ) -> _StreamAssembly | ChatCompletion:
        """The streamed answer; if the provider rejects streaming, the whole one."""
        try:
            return await self._stream(model, params, listener)
        except LLMRequestRejected:
            completion = await self._create(model, params)  # raises if that fails too
            self._streaming = False
            log.warning(
                "model %s rejected a streamed request but answered a whole one; "
                "streaming is off until restart",
                model,
            )
            return completion

    async def _stream(
        self, model: str, params: dict[str, Any], listener: StepListener
    ) -> _StreamAssembly:
        body: dict[str, Any] = {
            "model": model,
            **params,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        assembly = _StreamAssembly(listener)
        try:
            stream = await self._client.post(
                _COMPLETIONS_PATH,
                body=body,
                cast_to=ChatCompletion,
                options=_request_options(),
                stream=True,
                stream_cls=AsyncStream[object],  # chunks as parsed JSON, see `add`
            )
            async with stream:
                async for chunk in stream:
                    assembly.add(chunk)
        except openai.APIError as error:
            raise _translate(error, model) from error
        except openai.OpenAIError as error:
            raise LLMError(f"LLM client error ({type(error).__name__})", model=model) from error
        except Exception as error:  # broke off midway: the transport's own errors, bad JSON
            raise LLMUnavailable(
                f"model {model}: the stream broke off ({type(error).__name__})", model=model
            ) from error
        return assembly


class _StreamAssembly:
    """Joins the chunks of one streamed completion into what `_to_response` builds."""

    def __init__(self, listener: StepListener) -> None:
        self._listener = listener
        self.id: str | None = None
        self.text = ""
        self.refusal = ""
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.seen_choice = False
        # tool calls by their `index` in the stream: [id, name, argument pieces]
        self._calls: dict[int, list[Any]] = {}

    def add(self, chunk: Any) -> None:
        """One chunk as the JSON object the provider sent (no model built per chunk: a
        streamed answer is hundreds of chunks, and this runs for every one)."""
        if not isinstance(chunk, dict):
            raise ValueError("a stream chunk that is not a JSON object")
        self.id = self.id or chunk.get("id") or None
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            self.seen_choice = True
            if choice.get("finish_reason") is not None:
                self.finish_reason = choice["finish_reason"]
            self._add_delta(choice.get("delta") or {})

    def _add_delta(self, delta: dict[str, Any]) -> None:
        if delta.get("refusal"):
            self.refusal += delta["refusal"]
        for call in delta.get("tool_calls") or ():
            index = call.get("index", 0)
            entry = self._calls.get(index)
            if entry is None:
                entry = self._calls[index] = [None, None, []]
                self._listener.on_tool_call()
            function = call.get("function") or {}
            entry[0] = entry[0] or call.get("id")
            entry[1] = entry[1] or function.get("name")
            entry[2].append(function.get("arguments") or "")
        content = delta.get("content")
        if content:
            self.text += content
            if not self._calls:
                self._listener.on_text(self.text)

    def response(self, *, model: str, requested: str, latency: float) -> LLMResponse:
        if not self.seen_choice:
            raise LLMUnavailable(f"model {model} returned no choices", model=model)
        calls = tuple(
            ToolCall(id=entry[0] or "", name=entry[1] or "", arguments="".join(entry[2]))
            for _index, entry in sorted(self._calls.items())
        )
        raw: Message = {"role": "assistant", "content": self.text or None}
        if calls:
            raw["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in calls
            ]
        usage = self.usage if isinstance(self.usage, dict) else {}
        return LLMResponse(
            text=self.text or None,
            refusal=self.refusal or None,
            tool_calls=calls,
            model=model,
            finish_reason=self.finish_reason,
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
            total_tokens=_int_or_none(usage.get("total_tokens")),
            response_id=self.id,
            latency_ms=latency,
            requested_model=requested,
            raw_assistant_message=raw,
        )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cap_names(base_url: str | None) -> tuple[str, ...]:
    """The request fields that cap an answer's tokens at this endpoint: OpenAI's own API
    takes `max_completion_tokens` (its reasoning models refuse `max_tokens`); other
    OpenAI-compatible servers get both, as some read only the older `max_tokens`."""
    host = urlparse(base_url).hostname if base_url else "api.openai.com"
    if host == "api.openai.com":
        return ("max_completion_tokens",)
    return ("max_completion_tokens", "max_tokens")


def _chat_params(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None,
    tool_choice: ToolChoice | None,
    parallel_tool_calls: bool | None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"messages": list(messages)}
    if tools:
        params["tools"] = list(tools)
        if tool_choice is not None:
            params["tool_choice"] = tool_choice
        if parallel_tool_calls is not None:
            params["parallel_tool_calls"] = parallel_tool_calls
    return params


def _offered(name: str, offered: set[str]) -> bool:
    """Whether `name` is in the endpoint's model list, allowing the spellings providers use:
    Google lists "models/NAME", Ollama lists "NAME:latest" for a request of "NAME"."""
    return bool({name, f"models/{name}", f"{name}:latest"} & offered)


def _request_options() -> RequestOptions:
    """The options `create()` passes: bearer auth only (not the admin key), and the
    client's own timeout and retries (`timeout_s`, `max_retries`), which stay unset here."""
    return {"security": {"bearer_auth": True}}


def _aiohttp_client(timeout_s: float) -> Any:
    """The SDK's aiohttp transport when available, else None (the SDK's default)."""
    factory = getattr(openai, "DefaultAioHttpClient", None)
    if factory is None:
        return None
    try:
        return factory(timeout=timeout_s)
    except (ImportError, RuntimeError):  # the optional transport is not installed
        return None


def _connection_refused(error: BaseException) -> bool:
    """True when a "timeout" is really a refused or reset connection.

    The aiohttp transport reports every connection failure as a connect timeout; the
    original OS error is still in the chain of causes.
    """
    seen: BaseException | None = error
    for _ in range(10):  # causes form a short chain; bounded in case of a cycle
        if seen is None:
            return False
        if isinstance(seen, ConnectionError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _translate(error: openai.APIError, model: str) -> LLMError:
    """Map an SDK error to our own class; messages stay free of keys and bodies."""
    if isinstance(error, openai.APITimeoutError) and not _connection_refused(error):
        return LLMTimeout(f"model {model} timed out", model=model)
    if isinstance(error, openai.APITimeoutError):
        return LLMUnavailable(f"model {model} unreachable (connection error)", model=model)
    if isinstance(error, openai.APIConnectionError):
        return LLMUnavailable(f"model {model} unreachable (connection error)", model=model)
    if isinstance(error, openai.APIResponseValidationError):
        return LLMUnavailable(f"model {model} sent an unreadable response", model=model)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = f"model {model}: HTTP {status}"
        if status == 429:
            return LLMRateLimited(f"{detail} (rate limited)", model=model)
        if status in (401, 403):
            return LLMAuthenticationError(f"{detail} (authentication)", model=model)
        if status == 408 or status >= 500:
            return LLMUnavailable(f"{detail} (provider error)", model=model)
        return LLMRequestRejected(f"{detail} (request rejected)", model=model)
    return LLMError(f"model {model}: {type(error).__name__}", model=model)


def _to_response(completion: Any, *, model: str, requested: str, latency: float) -> LLMResponse:
    """Reduce a ChatCompletion to `LLMResponse`; `model` is the chain entry that answered."""
    choices = getattr(completion, "choices", None)
    if not choices:
        raise LLMUnavailable(f"model {model} returned no choices", model=model)
    choice = choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
        for call in (message.tool_calls or ())
        if getattr(call, "type", "function") == "function" and getattr(call, "function", None)
    )
    usage = completion.usage
    return LLMResponse(
        text=message.content,
        refusal=message.refusal or None,
        tool_calls=calls,
        model=model,
        finish_reason=choice.finish_reason,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        total_tokens=getattr(usage, "total_tokens", None),
        cached_tokens=_cached_tokens(usage),
        response_id=completion.id or None,
        latency_ms=latency,
        requested_model=requested,
        raw_assistant_message=_assistant_message(message),
    )


def _cached_tokens(usage: Any) -> int | None:
    """`usage.prompt_tokens_details.cached_tokens` when the provider reports it."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    return cached if isinstance(cached, int) else None


def _assistant_message(message: Any) -> Message:
    """The assistant message as received, ready to be sent back in the next request.

    Provider-specific extras (e.g. reasoning or signature fields) are kept because some
    providers require them back; fields that exist only in responses are dropped.
    """
    raw: dict[str, Any] = message.model_dump(mode="json", exclude_unset=True)
    for name in _RESPONSE_ONLY_FIELDS:
        raw.pop(name, None)
    if raw.get("refusal") is None:
        raw.pop("refusal", None)
    if not raw.get("tool_calls"):
        raw.pop("tool_calls", None)
    raw["role"] = "assistant"
    if raw.get("tool_calls") and raw.get("content") is None:
        # empty beside tool calls, not null: llama-cpp-python's server refuses null, and its
        # tool-calling template needs the field
        raw["content"] = ""
    else:
        raw.setdefault("content", None)
    return raw
