"""Per-user limits on what one account can make the bot send, for the routers.

Every update a customer's router answers is a message the bot sends, so every one is
counted (services/limits.py `UserMessageLimiter`, keyed by the sender: `caller_of`).
Two budgets, both of USER_MESSAGES_PER_MINUTE and USER_MESSAGES_PER_DAY: customers' messages
(text, voice notes, what they write during a handoff: each may cost a model turn or an
operator's attention) are checked by their handlers (`within_limits`); everything else
a customer can make the bot answer — commands, a shared contact, a press of a button —
by `LimitMiddleware` on those routers. Commands get a budget of their own so that a
/start or a 👍 never costs a question. Over a limit: one notice, then silence until the
window has passed. The admins' /stats and the operators' group are never limited (their
routers have no middleware).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import Router
from aiogram.dispatcher.middlewares.base import BaseMiddleware
from aiogram.types import CallbackQuery, Message, TelegramObject

from bot.telegram.context import UpdateContext
from bot.telegram.filters import caller_of
from services.limits import UserMessageLimiter


async def within_limit(key: int, ctx: UpdateContext, limiter: UserMessageLimiter) -> bool:
    """Whether `key`'s update may go on; over the limit: one notice, then silence."""
    decision = limiter.check(key)
    if decision.allowed:
        return True
    if decision.notify:
        await ctx.outbox.send(ctx.texts.rate_limited_notice)
    else:
        await ctx.outbox.ignore("user_rate_limited")
    return False


async def within_limits(message: Message, ctx: UpdateContext, limiter: UserMessageLimiter) -> bool:
    """USER_MESSAGES_PER_MINUTE/PER_DAY for the sender of a customer's message."""
    # keyed by the sender (anonymous admins: by their group, not one shared placeholder id)
    return await within_limit(caller_of(message).key, ctx, limiter)


def _sender_key(event: TelegramObject) -> int | None:
    if isinstance(event, Message):
        return caller_of(event).key
    if isinstance(event, CallbackQuery):
        return event.from_user.id
    return None


class LimitMiddleware(BaseMiddleware):
    """An inner middleware: it runs only for an update a handler of its router took (its
    filters passed), so a group's chatter the bot does not answer costs nothing."""

    def __init__(self, limiter: UserMessageLimiter) -> None:
        self._limiter = limiter

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        ctx: UpdateContext | None = data.get("ctx")
        key = _sender_key(event)
        if ctx is None or key is None or await within_limit(key, ctx, self._limiter):
            return await handler(event, data)
        if isinstance(event, Message) and event.contact is not None:
            await ctx.outbox.drop_contact()  # a refused contact is not kept either
        return None


def limit_updates(routers: list[Router], limiter: UserMessageLimiter) -> list[Router]:
    """`routers` with their messages and button presses counted by `limiter`."""
    middleware = LimitMiddleware(limiter)
    for router in routers:
        router.message.middleware(middleware)
        router.callback_query.middleware(middleware)
    return routers
