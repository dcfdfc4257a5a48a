"""CPU per Chat Completions request of the ways to send it with the openai SDK, and without.

Why: the LLM client skips `chat.completions.create()`'s recursive walk over its typed
arguments (measured at 3-8 ms of CPU per request). This compares, on one realistic
request (the support system prompt, ten history messages, the current question, a
tool-call step with two results, the registry's two strict tool schemas):

- `extra_body`: `create(model=..., messages=[], extra_body=<everything else>)` — the
  client's former way; the SDK's request options held an empty conversation;
- `typed`: `create(model=..., messages=..., tools=..., ...)` — the SDK's typed path;
- `post`: `client.post("/chat/completions", body=<the whole body>, cast_to=ChatCompletion)`
  — the client's way now (the SDK's request options hold the real body);
- `client`: `OpenAIChatModel.complete()` end to end (the `post` way plus reducing the
  response to `LLMResponse`);
- `aiohttp`: the same body as JSON over a plain aiohttp session, the answer parsed to a
  dict (no SDK: what a client of our own would start from, as `bench.naive_bot`'s lean
  floor does).

All ways use one `AsyncOpenAI` with the SDK's aiohttp transport against the fake OpenAI
server started as its own process (its CPU is not counted). Rounds interleave the ways
so drift of the machine hits all of them alike. Run from the repository root:

    .venv/bin/python -m bench.llm_request_cpu --requests 400 --concurrency 20 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from services.llm.client import OpenAIChatModel
from services.prompts.support_chat import SUPPORT_CHAT_V1
from tools.factory import build_registry

REPO_ROOT = Path(__file__).resolve().parents[1]
Send = Callable[[], Awaitable[Any]]


def realistic_messages() -> list[dict[str, Any]]:
    """The second model call of a turn in a conversation with some history."""
    system = SUPPORT_CHAT_V1.body.replace("{{shop_name}}", "Ромашка")
    history: list[dict[str, Any]] = []
    for n in range(5):
        history.append({"role": "user", "content": f"Здравствуйте, где мой заказ 80{n}1? " * 3})
        history.append(
            {"role": "assistant", "content": f"Заказ 80{n}1 передан в доставку, ждите. " * 4}
        )
    calls = [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_order_status", "arguments": '{"order_id": "8041"}'},
        },
        {
            "id": "call_b",
            "type": "function",
            "function": {"name": "get_return_policy", "arguments": '{"product": "кофемашина"}'},
        },
    ]
    results = [
        {"ok": True, "data": {"found": True, "order_id": "8041", "status": "in_transit"}},
        {"ok": True, "data": {"found": True, "product": "кофемашина", "days": 14}},
    ]
    return [
        {"role": "system", "content": system},
        *history,
        {"role": "user", "content": "Где заказ 8041 и можно ли вернуть кофемашину?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *(
            {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            for call, result in zip(calls, results, strict=True)
        ),
    ]


def senders(
    sdk: AsyncOpenAI, model: OpenAIChatModel, session: aiohttp.ClientSession, base_url: str
) -> dict[str, Send]:
    messages = realistic_messages()
    tools = build_registry().schemas()
    params: dict[str, Any] = {
        "messages": messages,
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }

    async def extra_body() -> Any:
        return await sdk.chat.completions.create(model="m", messages=[], extra_body=params)

    async def typed() -> Any:
        return await sdk.chat.completions.create(
            model="m", messages=messages, tools=tools, tool_choice="auto", parallel_tool_calls=True
        )

    async def post() -> Any:
        return await sdk.post(
            "/chat/completions",
            body={"model": "m", **params},
            cast_to=ChatCompletion,
            options={"security": {"bearer_auth": True}},
        )

    async def client() -> Any:
        return await model.complete(
            messages, tools=tools, tool_choice="auto", parallel_tool_calls=True
        )

    async def plain() -> Any:
        body = {"model": "m", **params}
        headers = {"Authorization": "Bearer k"}
        async with session.post(f"{base_url}/chat/completions", json=body, headers=headers) as r:
            r.raise_for_status()
            return await r.json()

    return {
        "extra_body": extra_body,
        "typed": typed,
        "post": post,
        "client": client,
        "aiohttp": plain,
    }


async def cpu_ms_per_request(send: Send, requests: int, concurrency: int) -> float:
    """Process CPU time per request while `requests` requests run, `concurrency` at once."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with semaphore:
            await send()

    started = time.process_time()
    await asyncio.gather(*(one() for _ in range(requests)))
    return (time.process_time() - started) * 1000 / requests


async def start_fake() -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fakes.openai_server",
        "--port",
        "0",
        "--latency-ms",
        "0",
        "--no-bodies",
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    async with asyncio.timeout(30):
        line = (await process.stdout.readline()).decode()
    return process, line.split()[-1]


async def run(requests: int, concurrency: int, rounds: int) -> dict[str, list[float]]:
    process, base_url = await start_fake()
    sdk = AsyncOpenAI(
        api_key="k",
        base_url=base_url,
        max_retries=0,
        timeout=30,
        http_client=openai.DefaultAioHttpClient(timeout=30),
    )
    model = OpenAIChatModel(api_key="k", model="m", base_url=base_url, max_retries=0)
    session = aiohttp.ClientSession()
    results: dict[str, list[float]] = {}
    try:
        ways = senders(sdk, model, session, base_url.rstrip("/"))
        for send in ways.values():  # warm up connections, caches and lazy imports
            await cpu_ms_per_request(send, 50, concurrency)
        for round_index in range(rounds):
            order = list(ways.items())
            order = order[round_index % len(order) :] + order[: round_index % len(order)]
            for name, send in order:
                results.setdefault(name, []).append(
                    await cpu_ms_per_request(send, requests, concurrency)
                )
    finally:
        await sdk.close()
        await model.aclose()
        await session.close()
        process.terminate()
        await process.wait()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per way per round")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    results = asyncio.run(run(args.requests, args.concurrency, args.rounds))
    print(
        f"CPU ms per request ({args.requests} requests x {args.rounds} rounds, "
        f"{args.concurrency} concurrent)"
    )
    print(f"{'way':<12}{'median':>8}{'min':>8}{'max':>8}   rounds")
    for name, values in results.items():
        rounds_text = " ".join(f"{v:.2f}" for v in values)
        print(
            f"{name:<12}{statistics.median(values):>8.2f}{min(values):>8.2f}"
            f"{max(values):>8.2f}   {rounds_text}"
        )


if __name__ == "__main__":
    main()
