"""✅/✖ presses on an action's confirmation card (bot/features/actions.py).

A press is a `callback_query` update, stored in the inbox before it is handled and
handled again after a crash until its reply is stored; services/actions.py makes that
safe (the row remembers the press). In order:

1. `claim`: someone else's card, a card already answered or an unknown one get a short
   note on the button (answerCallbackQuery) and nothing else; an expired one the
   "expired" message;
2. on ✅ the press is acknowledged ("working on it") *before* the shop is asked;
3. `carry_out` (state re-check, the backend call with the operation id);
4. the card's buttons are removed (cosmetic) — after the shop acted, before the result
   is stored;
5. `record` (the result and its history line, one transaction), then the result message
   in the customer's language is stored and sent like any reply; with handoff on, the
   operators' group gets a one-line note of an executed action.
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
    ResultKind,
    outcome_of,
    words_in,
)
from storage.actions import ActionRow
from storage.inbox import StoredReply

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
    return {
        ResultKind.DONE: texts.action_already,
        ResultKind.DECLINED: texts.action_declined,
        ResultKind.STATE_CHANGED: texts.action_state_changed,
        ResultKind.FAILED: texts.action_failed,
        ResultKind.CHECKING: texts.action_checking,
    }[outcome.kind]


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
            await _ack(sender, query, texts.action_already)
            await ctx.outbox.ignore("action_no_such_card")
            return
        claim = await service.claim(
            parsed.operation_id,
            chat_id=message.chat.id,
            user_id=query.from_user.id,
            update_id=ctx.update_id,
            confirm=parsed.choice is ActionChoice.CONFIRM,
        )
        row = claim.row
        if claim.kind in (ClaimKind.NO_SUCH_CARD, ClaimKind.ALREADY, ClaimKind.NOT_YOURS):
            note = (
                texts.action_not_yours
                if claim.kind is ClaimKind.NOT_YOURS
                else texts.action_already
            )
            await _ack(sender, query, note)
            await ctx.outbox.ignore(f"action_{claim.kind}")
            return
        assert row is not None
        if claim.kind is ClaimKind.EXPIRED:
            await _ack(sender, query, None)
            await _remove_buttons(sender, message)
            await ctx.outbox.send(texts.action_expired)
            return
        if claim.kind is ClaimKind.PROCEED:
            await _ack(sender, query, texts.action_working)
            outcome = await service.carry_out(row, recheck=claim.recheck)
            if outcome.kind is not ResultKind.CHECKING:  # unknown: ✅ stays to ask again
                await _remove_buttons(sender, message)
        elif claim.kind is ClaimKind.DECLINED:
            await _ack(sender, query, None)
            outcome = Outcome(ResultKind.DECLINED)
            await _remove_buttons(sender, message)
        else:  # FINISHED: this press was handled before a crash cut its reply off
            outcome = outcome_of(row)
        said = result_words(outcome, texts, ctx.language)
        card = service.card_words(row, ctx.language)
        await service.record(row, outcome, said=f"{card}\n{said}")
        also: tuple[StoredReply, ...] = ()
        if outcome.kind is ResultKind.DONE and operator_chat_id is not None:
            line = operators_line(row, outcome)
            also = (StoredReply(html=html.escape(line), plain=line, chat_id=operator_chat_id),)
        await ctx.outbox.send(said, also=also)

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
