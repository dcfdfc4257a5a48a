"""Order updates for customers: the "notify me" press, /updates and "stop".

The button under an answer that showed a customer their own order (bot/telegram/turn_view.py)
carries the order's number (`OrderUpdatesButton`); the press is checked again against
the shop and the presser (services/order_updates.py: owner only, private chat only), so
forged data subscribes nobody to anything. Every reply goes through the outbox like an
answer (stored, then sent); the press is acknowledged with answerCallbackQuery.
"""

from __future__ import annotations

import logging

from aiogram import Router
from aiogram.exceptions import TelegramAPIError
from aiogram.filters import Command
from aiogram.methods import AnswerCallbackQuery
from aiogram.types import CallbackQuery, InlineKeyboardMarkup, Message

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import AddressedToBot, IsCommand, caller_of
from bot.telegram.keyboards import OrderUpdatesButton
from bot.telegram.menu import MenuEntry
from bot.telegram.order_update_words import ORDER_UPDATE_WORDS, OrderUpdateWords
from bot.telegram.sender import Sender
from services.order_updates import OrderUpdates, Subscribed

log = logging.getLogger(__name__)

MENU = (MenuEntry("updates", lambda t: t.of(ORDER_UPDATE_WORDS).menu_updates),)

_OUTCOME_TEXT = {
    Subscribed.SUBSCRIBED: "order_updates_subscribed",
    Subscribed.ALREADY: "order_updates_already",
    Subscribed.FINISHED: "order_updates_finished",
    Subscribed.NOT_YOURS: "order_updates_not_yours",
}


def subscribe_words(outcome: Subscribed, texts: OrderUpdateWords, order: str) -> str:
    if outcome is Subscribed.PRIVATE_ONLY:
        return texts.order_updates_private_only
    if outcome is Subscribed.UNAVAILABLE:
        return texts.order_updates_unavailable
    return texts.for_order(_OUTCOME_TEXT[outcome], order)


async def _acknowledge(sender: Sender, query: CallbackQuery) -> None:
    try:
        await sender.call(AnswerCallbackQuery(callback_query_id=query.id))
    except TelegramAPIError as exc:  # cosmetic: the reply below says what happened
        log.debug("answerCallbackQuery failed (%s)", type(exc).__name__)


def build_order_updates_router(deps: HandlerDeps, updates: OrderUpdates) -> Router:
    """/updates and the two buttons (customers' commands: limited per user)."""
    router = Router(name="order_updates")

    @router.callback_query(OrderUpdatesButton.filter())
    async def on_press(
        query: CallbackQuery, callback_data: OrderUpdatesButton, ctx: UpdateContext
    ) -> None:
        await _acknowledge(deps.sender, query)
        message = query.message if isinstance(query.message, Message) else None
        if message is None:
            await ctx.outbox.ignore("order_updates_no_message")
            return
        number, texts = callback_data.order, ctx.texts.of(ORDER_UPDATE_WORDS)
        private = message.chat.type == "private" and message.chat.id == query.from_user.id
        if callback_data.action == "off":
            stopped = private and await updates.stop(message.chat.id, number)
            if not stopped:
                await ctx.outbox.ignore("order_updates_not_subscribed")
                return
            await ctx.outbox.send(texts.for_order("order_updates_stopped", number))
            return
        outcome = await updates.subscribe(
            user_id=query.from_user.id,
            chat_id=message.chat.id,
            private_chat=private,
            number=number,
            language=ctx.language,
        )
        await ctx.outbox.send(subscribe_words(outcome, texts, number))

    @router.message(IsCommand(), AddressedToBot(), Command("updates"))
    async def list_updates(message: Message, ctx: UpdateContext) -> None:
        texts = ctx.texts.of(ORDER_UPDATE_WORDS)
        caller = caller_of(message)
        if not caller.private_chat or caller.is_chat:
            await ctx.outbox.send(texts.order_updates_private_only)
            return
        active = await updates.active(message.chat.id)
        if not active:
            await ctx.outbox.send(texts.order_updates_none)
            return
        rows = []
        for subscription in active:
            number = subscription.order_number
            label = texts.for_order("order_updates_stop_button", number)
            button = OrderUpdatesButton.button("off", number, label)
            if button is not None:
                rows.append([button])
        lines = [texts.order_updates_list, *(f"- {s.order_number}" for s in active)]
        markup = InlineKeyboardMarkup(inline_keyboard=rows) if rows else None
        await ctx.outbox.send("\n".join(lines), reply_markup=markup)

    return router
