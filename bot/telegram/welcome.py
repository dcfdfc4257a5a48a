"""The welcome's (`/start`) middle part, `{examples}`: what the assistant can do and a few
questions to ask, in the customer's language, from the shop's own data (tools/shop/
examples.py) — a product of the shop's return policies, delivery and payment when its FAQ
answers them. A shop without those gets the order question alone."""

from __future__ import annotations

from bot.telegram.texts import Language
from tools.shop.examples import ShopExamples


def _ru(found: ShopExamples) -> str:
    can = ["подсказать, где сейчас ваш заказ", "рассказать об условиях возврата"]
    faq = {
        (True, True): "о доставке и оплате",
        (True, False): "о доставке",
        (False, True): "об оплате",
    }.get((found.delivery, found.payment))
    if faq:
        can.append(f"ответить на вопросы {faq}")
    ask = ["*Где сейчас мой заказ?* — и назовите его номер"]
    if found.product:
        ask.append(f"*Можно ли вернуть «{found.product}»?*")
    if found.delivery:
        ask.append("*Сколько стоит доставка?*")
    if found.payment:
        ask.append("*Как можно оплатить заказ?*")
    return _block("Я могу:", can, "Например, спросите:", ask)


def _en(found: ShopExamples) -> str:
    faq = [w for w, on in (("delivery", found.delivery), ("payment", found.payment)) if on]
    can = ["tell you where your order is now", "explain the return policy"]
    if faq:
        can.append("answer questions about " + " and ".join(faq))
    ask = ["*Where is my order now?* — with its number"]
    product = found.product_latin or found.product
    if product:
        ask.append(f"*Can I return “{product}”?*")
    if found.delivery:
        ask.append("*How much is delivery?*")
    if found.payment:
        ask.append("*How can I pay for my order?*")
    return _block("I can:", can, "For example, ask:", ask)


def _block(can_title: str, can: list[str], ask_title: str, ask: list[str]) -> str:
    abilities = ";\n".join(f"- {line}" for line in can) + "."
    questions = "\n".join(f"- {line}" for line in ask)
    return f"{can_title}\n{abilities}\n\n{ask_title}\n{questions}"


def welcome_examples(language: Language, found: ShopExamples) -> str:
    return _ru(found) if language == "ru" else _en(found)
