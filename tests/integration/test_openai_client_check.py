"""`OpenAIChatModel.check()`: the free start-up check (GET /models) against the fake."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.llm.client import OpenAIChatModel
from services.llm.errors import LLMAuthenticationError, LLMRateLimited, LLMUnavailable
from services.llm.types import ModelCheck
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, error

API_KEY = "sk-test-secret-key-123"


@pytest.fixture
async def client(fake_openai: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        api_key=API_KEY,
        model="primary",
        base_url=fake_openai.base_url,
        fallback_models=("backup", "spare"),
        max_retries=0,
        timeout_s=5,
    )
    try:
        yield model
    finally:
        await model.aclose()


async def test_every_configured_model_offered(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.models = ["primary", "backup", "spare", "other"]
    assert await client.check() == ModelCheck(listed=True, missing=())
    assert fake_openai.models_requests == 1 and fake_openai.requests == []  # no completion


async def test_missing_models_are_named_primary_first(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.models = ["backup"]
    assert await client.check() == ModelCheck(listed=True, missing=("primary", "spare"))


async def test_the_spellings_providers_list_count_as_offered(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    # Google's endpoint lists "models/NAME"; Ollama lists "NAME:latest" for "NAME"
    fake_openai.models = ["models/primary", "backup:latest", "spare-2"]
    assert await client.check() == ModelCheck(listed=True, missing=("spare",))


@pytest.mark.parametrize("status", [404, 405, 400])
async def test_an_endpoint_without_a_model_list_cannot_be_checked(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel, status: int
) -> None:
    fake_openai.models_reply = error(status, "no such route")
    result = await client.check()
    assert result == ModelCheck(listed=False, detail=f"GET /models answered HTTP {status}")


async def test_an_unreadable_list_cannot_be_checked(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.models_reply = FakeReply(body="<html>proxy page</html>")
    result = await client.check()
    assert not result.listed


@pytest.mark.parametrize(
    ("reply", "raised"),
    [
        (error(401, "Incorrect API key"), LLMAuthenticationError),
        (error(403, "forbidden"), LLMAuthenticationError),
        (error(429, "slow down"), LLMRateLimited),
        (error(503, "overloaded"), LLMUnavailable),
    ],
)
async def test_a_rejected_key_and_a_failing_endpoint_raise_typed_errors(
    fake_openai: FakeOpenAIServer,
    client: OpenAIChatModel,
    reply: FakeReply,
    raised: type[Exception],
) -> None:
    fake_openai.models_reply = reply
    with pytest.raises(raised) as info:
        await client.check()
    assert API_KEY not in str(info.value)


async def test_an_unreachable_endpoint_is_unavailable() -> None:
    server = await FakeOpenAIServer().start()
    base_url = server.base_url
    await server.close()  # nothing listens on this port any more
    model = OpenAIChatModel(api_key=API_KEY, model="primary", base_url=base_url, max_retries=0)
    try:
        with pytest.raises(LLMUnavailable):
            await model.check()
    finally:
        await model.aclose()
