"""The fake OpenAI server as a separate process, as end-to-end tests and the bench run it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp
import pytest

from services.llm.client import OpenAIChatModel
from services.llm.errors import LLMUnavailable

REPO_ROOT = Path(__file__).resolve().parents[2]


async def test_process_serves_the_keyword_script_and_its_control_endpoints(
    clean_env: dict[str, str],
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fakes.openai_server",
        "--port",
        "0",
        "--latency-ms",
        "1",
        cwd=REPO_ROOT,
        env=clean_env,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(120):  # an outer limit on a process's start
            line = (await process.stdout.readline()).decode()
        assert line.startswith("listening on ")
        base_url = line.split()[-1]
        model = OpenAIChatModel(api_key="k", model="m", base_url=base_url, max_retries=0)
        try:
            tools = [{"type": "function", "function": {"name": "get_order_status"}}]
            response = await model.complete(
                [{"role": "user", "content": "Где заказ 8041 и можно ли вернуть кофемашину?"}],
                tools=tools,
                tool_choice="auto",
                parallel_tool_calls=True,
            )
            assert [(c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
                ("get_order_status", {"order_id": "8041"}),
                ("get_return_policy", {"product": "кофемашина"}),
            ]
            info = await model.complete(
                [{"role": "user", "content": "Сколько стоит доставка и как оплатить?"}],
                tools=tools,
                tool_choice="auto",
                parallel_tool_calls=True,
            )
            assert [(c.name, json.loads(c.arguments)) for c in info.tool_calls] == [
                ("get_shop_info", {"topic": "доставка"}),
                ("get_shop_info", {"topic": "оплата"}),
            ]
            root = base_url.removesuffix("/v1")
            async with aiohttp.ClientSession() as http:
                async with http.get(f"{root}/_fake/requests") as reply:
                    assert len(await reply.json()) == 2
                await http.post(f"{root}/_fake/fail", json={"status": 503, "times": 1})
                with pytest.raises(LLMUnavailable):
                    await model.complete([{"role": "user", "content": "hi"}])
                reply_after = await model.complete([{"role": "user", "content": "hi"}])
                assert reply_after.text
        finally:
            await model.aclose()
    finally:
        process.terminate()
        async with asyncio.timeout(60):  # an outer limit
            await process.wait()
