"""The shop's knowledge as an owner and a customer meet it, through the real process: the
owner adds the help centre (a local site: sitemap, shared navigation, a linked PDF) with
`support-bot knowledge add`, a customer's question in other words gets the right page's
link, and after a page changes and another is deleted `knowledge sync` has the new text
and never the deleted page."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.e2e.chat_helpers import ask
from tests.e2e.conftest import StartBot
from tests.e2e.launch import run_bot_command
from tests.fakes.help_site import HelpSite
from tests.fakes.openai_server import (
    Body,
    FakeOpenAIServer,
    FakeReply,
    completion,
    default_script,
    fake_call,
)
from tests.fakes.telegram_server import FakeTelegramServer

pytestmark = pytest.mark.both_backends

CUSTOMER = 961
WEEKENDS = "/dostavka-vyhodnye.html"
PICKUP = "/samovyvoz.html"


async def knowledge_cli(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    """`support-bot knowledge ARGS` as the owner runs it (a thread: the site is served by
    this test's event loop)."""
    done = await asyncio.to_thread(run_bot_command, ["knowledge", *args], env=env, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def citing_model(body: Body) -> FakeReply:
    """Searches the shop's knowledge for a question and answers with the best passage
    and its link, or says it does not know."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if not body.get("tools"):
        return default_script(body)
    if last.get("role") == "tool":
        data = json.loads(str(last.get("content"))).get("data") or {}
        passages = data.get("passages") or []
        if data.get("found") and passages:
            best = passages[0]
            return completion(text=f"{best['text'][:300]}\nПодробнее: {best.get('url')}")
        return completion(text="Извините, я не знаю ответа на этот вопрос.")
    text = str(last.get("content"))
    if text.rstrip().endswith("?"):
        return completion(tool_calls=[fake_call("search_knowledge", {"query": text})])
    return default_script(body)


async def test_the_owner_adds_a_site_and_the_customer_gets_the_page_and_sync_follows_it(
    start_bot: StartBot,
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    help_site: HelpSite,
    tmp_path: Path,
) -> None:
    env = {**bot_base_env, "KNOWLEDGE_ALLOW_PRIVATE_ADDRESSES": "true"}  # the site is local
    code, _out, err = await knowledge_cli(env, tmp_path, "add", help_site.url("/sitemap.xml"))
    assert code == 0, err
    assert "Traceback" not in err
    code, listed, err = await knowledge_cli(env, tmp_path, "list")
    assert code == 0 and help_site.base_url in listed, (listed, err)

    fake_openai.handler = citing_model
    await start_bot(env)
    answer = await ask(fake_telegram, CUSTOMER, "Вы доставляете по выходным?")
    assert help_site.url(WEEKENDS) in answer, answer

    help_site.change_page(
        WEEKENDS,
        "<h1>Доставка в выходные</h1><p>С января курьеры возят заказы и в праздники, "
        "тариф 490 ₽ по Москве.</p>",
    )
    help_site.delete_page(PICKUP)
    code, _out, err = await knowledge_cli(env, tmp_path, "sync")
    assert code == 0, err

    code, found, err = await knowledge_cli(env, tmp_path, "search", "доставка в праздники")
    assert code == 0, err
    assert "490 ₽" in found and help_site.url(WEEKENDS) in found, found
    code, everything, err = await knowledge_cli(env, tmp_path, "list")
    assert code == 0 and help_site.url(PICKUP) not in everything
    code, pickup, err = await knowledge_cli(env, tmp_path, "search", "можно забрать самому?")
    assert code == 0 and help_site.url(PICKUP) not in pickup, pickup
    # the running bot reads the same index: the changed page, no restart
    again = await ask(fake_telegram, CUSTOMER, "Возите ли вы заказы в праздники?")
    assert "490 ₽" in again and help_site.url(PICKUP) not in again, again
