"""`OpenAIChatModel.transcribe` through the real SDK against the fake endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.llm.client import OpenAIChatModel
from services.llm.errors import LLMModelNotFound, LLMRequestRejected, LLMUnavailable
from tests.fakes.openai_server import FakeOpenAIServer, error
from tests.fakes.openai_server import fake_openai as fake_openai


@pytest.fixture
async def client(fake_openai: FakeOpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel(
        api_key="sk-test", model="primary", base_url=fake_openai.base_url, max_retries=0
    )
    try:
        yield model
    finally:
        await model.aclose()


async def test_the_audio_goes_as_a_multipart_file_and_the_text_comes_back(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.transcripts[b"\x4f\x67\x67S audio"] = "Где мой заказ 8041?"
    text = await client.transcribe(b"OggS audio", filename="voice.ogg", model="whisper-1")
    assert text == "Где мой заказ 8041?"
    assert fake_openai.transcriptions == [
        {"model": "whisper-1", "filename": "voice.ogg", "size": len(b"OggS audio")}
    ]
    assert fake_openai.requests == []  # no chat completion


async def test_a_model_the_endpoint_lacks_is_model_not_found(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    with pytest.raises(LLMModelNotFound):
        await client.transcribe(b"x", filename="voice.ogg", model="whisper-9")


async def test_an_endpoint_without_transcriptions_is_model_not_found(
    fake_openai: FakeOpenAIServer, client: OpenAIChatModel
) -> None:
    fake_openai.transcription_reply = error(404, "Not Found")
    with pytest.raises(LLMModelNotFound):
        await client.transcribe(b"x", filename="voice.ogg", model="whisper-1")


@pytest.mark.parametrize(("status", "kind"), [(500, LLMUnavailable), (400, LLMRequestRejected)])
async def test_other_errors_are_typed(
    fake_openai: FakeOpenAIServer,
    client: OpenAIChatModel,
    status: int,
    kind: type[Exception],
) -> None:
    fake_openai.transcription_reply = error(status, "nope")
    with pytest.raises(kind) as raised:
        await client.transcribe(b"x", filename="voice.ogg", model="whisper-1")
    assert not isinstance(raised.value, LLMModelNotFound)
