"""The floor the bot is measured against: the support bot anyone would write first.

An aiogram bot that long-polls, keeps each chat's last messages in a dict, asks the
model with the same three tools the bench's questions need (answered from constants),
runs the tool calls the model asks for, and sends the model's text. Nothing is stored,
nothing is acknowledged late, no typing indicator, no limits, no audit: a message that
arrives while it crashes is lost, and a busy chat's questions may be answered out of
order. What the bot does beyond this is what the comparison prices
(`--only modes-together --floor`, docs/benchmarks.md).

It gets uvloop like the bot, so the comparison is about what each bot does, not which
event loop runs it. `NAIVE_MODEL_CLIENT` picks how it calls the model: `openai` (the
SDK, as a first bot would; most of its CPU goes there) or `aiohttp` (plain JSON over
one session: the lean floor). Other settings come from the bot's environment variables
(`BOT_TOKEN`, `TELEGRAM_API_URL`, `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any, cast

import aiohttp
from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Message
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionFunctionToolParam

from bot.programs.cli import event_loop_factory

HISTORY_MESSAGES = 20  # the last user and assistant messages sent with each question
MAX_MODEL_CALLS = 4
MODEL_CONNECTIONS = 1000  # the openai SDK's default connection limit
INSTRUCTION = (
    "Ты — вежливый помощник интернет-магазина. Отвечай кратко, на языке клиента. "
    "Статус заказа узнавай через get_order_status, условия возврата через "
    "get_return_policy, доставку, оплату и контакты через get_shop_info."
)


def _tool(name: str, description: str, argument: str) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {argument: {"type": "string"}},
                "required": [argument],
            },
        },
    }


TOOLS = [
    _tool("get_order_status", "Статус заказа по его номеру.", "order_id"),
    _tool("get_return_policy", "Условия возврата товара.", "product"),
    _tool("get_shop_info", "Доставка, оплата, контакты магазина.", "topic"),
]


def run_tool(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A constant answer per tool, in the shape the bench's fake model quotes."""
    if name == "get_order_status":
        order = str(arguments.get("order_id", ""))
        return {"ok": True, "data": {"order_id": order, "status": "в пути"}}
    if name == "get_return_policy":
        product = str(arguments.get("product", ""))
        return {"ok": True, "data": {"product": product, "days": 14}}
    if name == "get_shop_info":
        topic = str(arguments.get("topic", ""))
        entry = {"topic": topic, "answer": "2-3 дня курьером"}
        return {"ok": True, "data": {"found": True, "entries": [entry]}}
    return {"ok": False, "error": {"code": "unknown_tool"}}


Complete = Callable[[list[dict[str, Any]]], Awaitable[dict[str, Any]]]


def sdk_client(
    _session: aiohttp.ClientSession, base_url: str, api_key: str, model: str
) -> Complete:
    """The model through the `openai` SDK, as a first bot would call it."""
    client = AsyncOpenAI(base_url=base_url, api_key=api_key)

    async def complete(messages: list[dict[str, Any]]) -> dict[str, Any]:
        response = await client.chat.completions.create(
            model=model, messages=cast(Any, messages), tools=TOOLS
        )
        return response.choices[0].message.model_dump(exclude_none=True)

    return complete


def aiohttp_client(
    session: aiohttp.ClientSession, base_url: str, api_key: str, model: str
) -> Complete:
    """The model over one aiohttp session, JSON in and out: the least a client can do."""
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"}

    async def complete(messages: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"model": model, "messages": messages, "tools": TOOLS}
        async with session.post(url, json=body, headers=headers) as response:
            response.raise_for_status()
            message: dict[str, Any] = (await response.json())["choices"][0]["message"]
            return message

    return complete


CLIENTS = {"openai": sdk_client, "aiohttp": aiohttp_client}


class NaiveBot:
    """One chat's history in memory; the model asked until it answers with text."""

    def __init__(self, complete: Complete) -> None:
        self._complete = complete
        self._history: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)

    async def answer(self, message: Message) -> None:
        history = self._history[message.chat.id]
        history.append({"role": "user", "content": message.text or ""})
        messages: list[dict[str, Any]] = [{"role": "system", "content": INSTRUCTION}, *history]
        text = ""
        for _ in range(MAX_MODEL_CALLS):
            reply = await self._complete(messages)
            calls = reply.get("tool_calls")
            if not calls:
                text = reply.get("content") or ""
                break
            messages.append(reply)
            for call in calls:
                function = call["function"]
                result = run_tool(function["name"], json.loads(function["arguments"] or "{}"))
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
                )
        history.append({"role": "assistant", "content": text})
        del history[:-HISTORY_MESSAGES]
        await message.answer(text or "Извините, не получилось ответить.")


async def main() -> None:
    server = TelegramAPIServer.from_base(os.environ["TELEGRAM_API_URL"])
    bot = Bot(os.environ["BOT_TOKEN"], session=AiohttpSession(api=server))
    client = CLIENTS[os.environ.get("NAIVE_MODEL_CLIENT", "openai")]
    # as many connections to the model as the SDK allows (aiohttp's default is 100:
    # with 1 s model latency that alone caps the floor near 60 turns/s)
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=MODEL_CONNECTIONS))
    naive = NaiveBot(
        client(
            session,
            os.environ["OPENAI_BASE_URL"],
            os.environ["OPENAI_API_KEY"],
            os.environ.get("OPENAI_MODEL", "fake-model"),
        )
    )
    dispatcher = Dispatcher()
    dispatcher.message.register(naive.answer)

    async def ready() -> None:
        print("bot: ready", flush=True)  # the line the bench waits for

    dispatcher.startup.register(ready)
    try:
        await dispatcher.start_polling(bot, allowed_updates=["message"])
    finally:
        await session.close()


if __name__ == "__main__":
    with asyncio.Runner(loop_factory=event_loop_factory(True)) as runner:
        runner.run(main())
