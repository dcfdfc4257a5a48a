"""✅/✖ presses on an action's confirmation card (bot/features/actions.py).

A press is a `callback_query` update, stored in the inbox before it is handled and
handled again after a crash until its reply is stored; services/actions.py makes that
safe (the row remembers the press). In order:

`ActionService.press` runs the one path (claim → carry out → record, the same for
`simulate`); this router adds what is Telegram's:

1. someone else's card, a card already answered or one no longer offered get the honest
   short note on the button (answerCallbackQuery: "not for you", "already done",
   "already answered", "no longer offered") and nothing else; an expired one the
   "expired" message;
2. on ✅ the press is acknowledged ("working on it") *before* the shop is asked;
3. the card's buttons are removed (cosmetic) — after the shop acted, before the result
   is stored;
4. the result message in the customer's language is stored and sent like any reply;
   with handoff on, the operators' group gets a one-line note of an executed action.
"""

from __future__ import annotations

import html
import logging
from typing import TypeVar

from aiogram import Router
from aiogram.exceptions import TelegramAPIError
from aiogram.filters import Filter
from aiogram.methods import AnswerCallbackQuery, EditMessageReplyMarkup, TelegramMethod
from aiogram.types import CallbackQuery, Message

from bot.context import HandlerDeps, UpdateContext
from bot.keyboards import ActionButton, ActionChoice
from bot.sender import Sender
from bot.texts import Texts
from services.actions import (
    ActionService,
    ClaimKind,
    Outcome,
    Press,
    PressSteps,
    ResultKind,
    words_in,
)
from storage.actions import ActionRow, ActionStatus
from storage.inbox import StoredReply
from tools.shop.backend import NOT_SUPPORTED

log = logging.getLogger(__name__)
T = TypeVar("T")

_PREFIX = f"{ActionButton.__prefix__}{ActionButton.__separator__}"


class IsActionPress(Filter):
    """A press whose data claims to be an action card's (validated by the handler)."""

    async def __call__(self, query: CallbackQuery) -> bool:
        return (query.data or "").startswith(_PREFIX)


def result_words(outcome: Outcome, texts: Texts, language: str) -> str:
    if outcome.kind is ResultKind.DONE and outcome.words:
        return words_in(outcome.words, language)
    if outcome.kind is ResultKind.FAILED and outcome.reason == NOT_SUPPORTED:
        return texts.action_not_supported
    return {
        ResultKind.DONE: texts.action_already,
        ResultKind.DECLINED: texts.action_declined,
        ResultKind.STATE_CHANGED: texts.action_state_changed,
        ResultKind.FAILED: texts.action_failed,
        ResultKind.CHECKING: texts.action_checking,
        ResultKind.NEEDS_ATTENTION: texts.action_needs_attention,
    }[outcome.kind]


def press_note(press: Press, texts: Texts) -> str:
    """The button's note for a press that changed nothing: the honest word for it."""
    if press.kind is ClaimKind.NOT_YOURS:
        return texts.action_not_yours
    row = press.row
    if press.kind is ClaimKind.ALREADY and row is not None:
        if row.status is ActionStatus.DONE:
            return texts.action_already
        if row.status in (ActionStatus.CONFIRMED, ActionStatus.EXECUTING):
            return texts.action_working  # another press is carrying it out
        return texts.action_answered
    return texts.action_no_longer_offered


def operators_line(row: ActionRow, outcome: Outcome) -> str:
    """The operators' one line about an executed action (no customer's words)."""
    reference = f", {outcome.reference}" if outcome.reference else ""
    return (
        f"✅ {row.action}: order {row.order_number}{reference} — customer {row.user_id}, "
        f"op {row.operation_id[:8]}"
    )


def build_action_router(
    deps: HandlerDeps, service: ActionService, *, operator_chat_id: int | None
) -> Router:
    router = Router(name="actions")
    sender = deps.sender

    @router.callback_query(IsActionPress())
    async def on_action(query: CallbackQuery, ctx: UpdateContext) -> None:
        texts = ctx.texts
        parsed = ActionButton.read(query.data)
        message = query.message if isinstance(query.message, Message) else None
        if parsed is None or message is None:
            await _ack(sender, query, texts.action_no_longer_offered)
            await ctx.outbox.ignore("action_no_such_card")
            return

        def history(row: ActionRow, outcome: Outcome) -> str:
            said = result_words(outcome, texts, ctx.language)
            return f"{service.card_words(row, ctx.language)}\n{said}"

        async def working() -> None:
            await _ack(sender, query, texts.action_working)

        async def settled() -> None:
            await _remove_buttons(sender, message)

        press = await service.press(
            parsed.operation_id,
            chat_id=message.chat.id,
            user_id=query.from_user.id,
            update_id=ctx.update_id,
            confirm=parsed.choice is ActionChoice.CONFIRM,
            history=history,
            steps=PressSteps(working=working, settled=settled),
            language=ctx.language,
        )
        if press.kind is ClaimKind.EXPIRED:
            await _ack(sender, query, None)
            await ctx.outbox.send(texts.action_expired)
            return
        if press.outcome is None or press.row is None:
            await _ack(sender, query, press_note(press, texts))
            await ctx.outbox.ignore(f"action_{press.kind}")
            return
        outcome, row = press.outcome, press.row
        if press.kind is ClaimKind.DECLINED:
            await _ack(sender, query, None)
        said = result_words(outcome, texts, ctx.language)
        also: tuple[StoredReply, ...] = ()
        if outcome.kind is ResultKind.DONE and operator_chat_id is not None:
            line = operators_line(row, outcome)
            also = (StoredReply(html=html.escape(line), plain=line, chat_id=operator_chat_id),)
        await ctx.outbox.send(said, also=also)

    return router


def build_actions_off_router(deps: HandlerDeps) -> Router:
    """Actions off (ACTIONS_ENABLED empty, or the shop does none): a press on a card sent
    while they were on gets the honest note, so the customer's client stops waiting."""
    router = Router(name="actions_off")

    @router.callback_query(IsActionPress())
    async def on_old_card(query: CallbackQuery, ctx: UpdateContext) -> None:
        await _ack(deps.sender, query, ctx.texts.action_no_longer_offered)
        await ctx.outbox.ignore("action_off")

    return router


async def _ack(sender: Sender, query: CallbackQuery, text: str | None) -> None:
    await _cosmetic(sender, AnswerCallbackQuery(callback_query_id=query.id, text=text))


async def _remove_buttons(sender: Sender, message: Message) -> None:
    await _cosmetic(
        sender, EditMessageReplyMarkup(chat_id=message.chat.id, message_id=message.message_id)
    )


async def _cosmetic(sender: Sender, method: TelegramMethod[T]) -> None:
    try:
        await sender.call(method)
    except TelegramAPIError as exc:
        log.warning("%s failed (%s); the action goes on", method.__api_method__, type(exc).__name__)
