"""A small rule-based model that behaves like a careful support model, for the default
simulation suite in CI (a handler for tests/fakes/openai_server.py).

What it proves, and what it does not: a scenario of the default suite that passes against
it is satisfiable by a model that follows the bot's rules, through the real HTTP client,
loop, tools, executor, output guard, summaries and the simulation's judging. It says
nothing about how well a real model does: it is written to be careful (it asks for a
number instead of guessing, never claims a cancellation, treats instruction-like text
in tool data as data and leaves it out, recalls order numbers from the summary). A real
model's scores come from running the suite against it (docs/simulations.md).

Rules, from the last customer message and the tool results of this turn:
- a request for a person → `request_human`;
- order numbers, "return"+product, shop topics → the same calls as `default_script`;
- a question about a product (have / sell / how much / in stock / size…), when
  `search_products` is offered → one search with the customer's words and the size or
  colour they named; its answer names only the products found, with their prices,
  availability and page, or says the shop has no such product;
- "cancel" with an order number, when `propose_cancel_order` is offered (actions on) →
  that proposal too; its answer asks to press the card, or says it cannot be cancelled;
- once the results are in → an answer in the customer's language, built from them;
- a question (a "?" or a question word) that nothing above answers, when
  `search_knowledge` is offered → that search with the customer's words; its answer is
  the best passage (instruction-like sentences left out) with its source's link, or an
  honest "I don't know" with the shop's contacts;
- "remind me which order" → the numbers found in the summary and the history;
- requests without tools → a summary (which keeps the order numbers), or, when the
  system message is the simulated customer's, the customer's first message from its
  goal (`Your first message: "…"`) and then the stop word.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.openai_server import (
    Body,
    FakeReply,
    _is_russian,
    _text_of,
    _wanted_calls,
    completion,
    fake_call,
)

_HANDOFF_WORDS = ("человек", "оператор", "сотрудник", "human", "person", "operator")
_RECALL_WORDS = ("напомните", "remind")
_INSTRUCTION_LIKE = re.compile(r"(SYSTEM:|игнорируй|ignore (all|previous)|инструкци)", re.I)
_ORDER_RE = re.compile(r"(?<!\d)\d{4}(?!\d)")

STATUS_WORDS = {
    "processing": ("в обработке", "being processed"),
    "in_transit": ("в пути", "on its way"),
    "ready_for_pickup": ("ждёт вас в пункте выдачи", "ready for pickup"),
    "delivered": ("доставлен", "delivered"),
    "cancelled": ("отменён магазином", "cancelled by the shop"),
}


def _safe(text: object) -> str:
    """Data as data: a sentence that reads like an instruction is left out."""
    sentences = re.split(r"(?<=[.!?])\s+", str(text))
    return " ".join(s for s in sentences if not _INSTRUCTION_LIKE.search(s)).strip()


def _order_text(data: Body, ru: bool) -> str:
    number = data.get("order_id")
    if not data.get("found"):
        if ru:
            return f"Заказ {number} не найден среди ваших заказов. Проверьте, пожалуйста, номер."
        return f"I could not find order {number} among your orders. Please check the number."
    status = STATUS_WORDS.get(str(data.get("status")), (str(data.get("status")),) * 2)
    parts = [f"Заказ {number}: {status[0]}." if ru else f"Order {number} is {status[1]}."]
    if data.get("pickup_point") and data.get("status") in ("ready_for_pickup", "in_transit"):
        where = _safe(data["pickup_point"])
        parts.append(f"Пункт выдачи: {where}." if ru else f"Pickup point: {where}.")
    if data.get("expected_date") and data.get("status") == "in_transit":
        when = data["expected_date"]
        parts.append(f"Ожидаемая дата: {when}." if ru else f"Expected on {when}.")
    return " ".join(parts)


def _policy_text(data: Body, ru: bool) -> str:
    product = data.get("matched_product") or data.get("product")
    if data.get("found"):
        days = data.get("return_days")
        if ru:
            conditions = _safe(data.get("conditions") or "")
            return f"{product}: вернуть можно в течение {days} дней после получения. {conditions}"
        return f"{product}: can be returned within {days} days of receipt."
    if ru:
        return f"Для товара «{product}» нет отдельных условий возврата; уточните у магазина."
    return f"There are no specific return terms for {product}; please ask the shop."


def _info_text(data: Body, ru: bool) -> str:
    if data.get("found"):
        return " ".join(
            f"{e.get('topic')}: {_safe(e.get('answer'))}" for e in data.get("entries") or []
        )
    contacts = data.get("contacts") or ""
    if ru:
        return f"К сожалению, у меня нет сведений об этом. Связаться с магазином: {contacts}"
    return f"Sorry, I have no information about that. Contact the shop: {contacts}"


_QUESTION = re.compile(
    r"\?|^(как|где|когда|сколько|можно|есть ли|what|how|when|where|can|do you|is there)\b", re.I
)


def _knowledge_text(data: Body, ru: bool) -> str:
    passages = data.get("passages") or []
    if data.get("found") and passages:
        best = passages[0]
        source = best.get("url") or best.get("file") or best.get("title")
        said = _safe(best.get("text"))[:400]
        return f"{said} {'Источник' if ru else 'Source'}: {source}"
    contacts = data.get("contacts") or ""
    if ru:
        return f"К сожалению, я не знаю ответа на этот вопрос. Связаться с магазином: {contacts}"
    return f"Sorry, I don't know the answer to that. Contact the shop: {contacts}"


_PRODUCT_WORDS = (
    "есть ли",
    "есть у вас",
    "у вас есть",
    "продаёте",
    "продаете",
    "сколько стоит",
    "в наличии",
    "размер",
    "купить",
    "do you have",
    "do you sell",
    "how much",
    "in stock",
    "size",
    "buy",
)
_SIZE = re.compile(r"(?:размер[а-я]*\s+(\w+)|(\w+)\s+размер|size\s+(\w+))", re.I)
_COLOURS = ("чёрн", "черн", "бел", "син", "голуб", "сер", "black", "white", "blue", "grey")
AVAILABILITY = {
    "in_stock": ("в наличии", "in stock"),
    "few_left": ("осталось немного", "only a few left"),
    "out_of_stock": ("нет в наличии", "out of stock"),
}


def _product_search(text: str) -> tuple[str, dict[str, Any]] | None:
    lowered = text.lower()
    if _ORDER_RE.search(text) or not any(word in lowered for word in _PRODUCT_WORDS):
        return None
    arguments: dict[str, Any] = {"query": text.strip()[:200]}
    size = _SIZE.search(text)
    if size:
        arguments["size"] = next(g for g in size.groups() if g)
    colour = next((w for w in re.findall(r"\w+", lowered) if w.startswith(_COLOURS)), None)
    if colour:
        arguments["colour"] = colour
    return "search_products", arguments


def _products_text(data: Body, ru: bool) -> str:
    lines = []
    for product in data.get("products") or []:
        for variant in product.get("variants") or []:
            options = ", ".join(str(v) for v in (variant.get("options") or {}).values())
            price = variant.get("price") or {}
            words = AVAILABILITY.get(str(variant.get("availability")), ("?", "?"))
            line = "" if ru else "The shop has "
            line += f"{_safe(product.get('title'))}"
            line += f" ({options})" if options else ""
            if ru:
                line += f": {price.get('amount')} {price.get('currency')}, {words[0]}"
            else:
                line += f" for {price.get('amount')} {price.get('currency')}; it is {words[1]}"
            if variant.get("restock_date"):
                line += (" до " if ru else " until ") + str(variant["restock_date"])
            lines.append(line)
        if product.get("url"):
            lines.append(("Страница товара: " if ru else "You can see it here: ") + product["url"])
    if not lines:
        for product in data.get("out_of_stock") or []:
            lines.append(
                f"{_safe(product.get('title'))}: " + ("нет в наличии" if ru else "out of stock")
            )
    if lines:
        return "\n".join(lines)
    if ru:
        return "К сожалению, такого товара в нашем магазине нет."
    return "Sorry, the shop does not have such a product."


def _handoff_text(data: Body, ru: bool) -> str:
    if ru:
        return "Передаю разговор сотруднику магазина — вам ответят здесь, в этом чате."
    return "I am handing the conversation to a person from the shop; they will answer here."


def _proposal_text(data: Body, ru: bool) -> str:
    number = data.get("order_id")
    if data.get("proposed"):
        if ru:
            return "Проверьте, пожалуйста, карточку ниже и нажмите кнопку, чтобы подтвердить."
        return "Please check the card below and press a button to confirm."
    if not data.get("found"):
        return ""  # the order lookup's answer says it
    return f"Заказ {number} отменить нельзя." if ru else f"Order {number} cannot be cancelled."


def _answer(name: str, result: Any, ru: bool) -> str:
    if not isinstance(result, dict) or result.get("ok") is not True:
        return "Не получилось проверить это сейчас." if ru else "I could not check that right now."
    data = result.get("data") or {}
    render = {
        "get_order_status": _order_text,
        "get_return_policy": _policy_text,
        "get_shop_info": _info_text,
        "search_products": _products_text,
        "request_human": _handoff_text,
        "propose_cancel_order": _proposal_text,
        "search_knowledge": _knowledge_text,
    }.get(name)
    return render(data, ru) if render else ""


def _turn(
    messages: list[Body], last_user: int
) -> tuple[list[tuple[str, dict[str, Any], str]], dict[str, Any]]:
    made: list[tuple[str, dict[str, Any], str]] = []
    results: dict[str, Any] = {}
    for message in messages[last_user + 1 :]:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            made.append((str(function.get("name")), arguments, str(call.get("id"))))
        if message.get("role") == "tool":
            try:
                results[str(message.get("tool_call_id"))] = json.loads(_text_of(message))
            except ValueError:
                results[str(message.get("tool_call_id"))] = None
    return made, results


def _without_tools(messages: list[Body]) -> FakeReply:
    system = _text_of(messages[0]) if messages else ""
    if "role-playing a customer" in system:
        if any(m.get("role") == "assistant" for m in messages):
            return completion(text="###STOP###")
        first = re.search(r"(?:first message|первое сообщение): \"([^\"]+)\"", system, re.I)
        return completion(text=first.group(1) if first else "###STOP###")
    text = " ".join(_text_of(m) for m in messages[1:])
    numbers = ", ".join(dict.fromkeys(_ORDER_RE.findall(text))) or "нет"
    return completion(text=f"Клиент писал о заказах: {numbers}. Темы: {text[-300:]}")


def _recall(messages: list[Body], ru: bool) -> str:
    earlier = " ".join(_text_of(m) for m in messages[:-1] if m.get("role") != "tool")
    numbers = list(dict.fromkeys(_ORDER_RE.findall(earlier)))
    if not numbers:
        return "Номер заказа в разговоре не называли." if ru else "No order number was mentioned."
    joined = ", ".join(numbers)
    return f"Вы называли заказ {joined}." if ru else f"You mentioned order {joined}."


def _asks_the_shop(text: str, lowered: str) -> bool:
    """A question for the shop's knowledge: not about an order, not an instruction."""
    if any(word in lowered for word in ("заказ", "order")) or _INSTRUCTION_LIKE.search(text):
        return False
    return bool(_QUESTION.search(lowered.strip()))


def careful_script(body: Body) -> FakeReply:
    messages: list[Body] = list(body.get("messages") or [])
    if not body.get("tools"):
        return _without_tools(messages)
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    user_text = _text_of(messages[last_user]) if last_user >= 0 else ""
    ru = _is_russian(user_text)
    lowered = user_text.lower()
    made, results = _turn(messages, last_user)
    offered = {str((t.get("function") or {}).get("name")) for t in body.get("tools") or []}
    wanted: list[tuple[str, dict[str, Any]]] = []
    if any(word in lowered for word in _HANDOFF_WORDS) and "request_human" in offered:
        wanted.append(("request_human", {"reason": "the customer asked for a person"}))
    elif any(word in lowered for word in _RECALL_WORDS):
        return completion(text=_recall(messages, ru))
    else:
        wanted = _wanted_calls(user_text)
        product = _product_search(user_text) if "search_products" in offered else None
        if product is not None and not wanted:
            wanted.append(product)
        if "propose_cancel_order" in offered and ("отмен" in lowered or "cancel" in lowered):
            wanted += [
                ("propose_cancel_order", {"order_id": n}) for n in _ORDER_RE.findall(user_text)
            ]
        if not wanted and _asks_the_shop(user_text, lowered) and "search_knowledge" in offered:
            wanted.append(("search_knowledge", {"query": user_text.strip()[:300]}))
    pending = [(n, a) for n, a in wanted if (n, a) not in [(m, b) for m, b, _ in made]]
    if pending and body.get("tool_choice") != "none":
        return completion(tool_calls=[fake_call(name, args) for name, args in pending])
    if made:
        texts = [_answer(name, results.get(call_id), ru) for name, _, call_id in made]
        return completion(text=" ".join(t for t in texts if t))
    if any(word in lowered for word in ("заказ", "order")):
        return completion(
            text="Подскажите, пожалуйста, 4-значный номер заказа?"
            if ru
            else "Could you tell me your 4-digit order number?"
        )
    return completion(text="Здравствуйте! Чем могу помочь?" if ru else "Hello! How can I help you?")
