"""✅/✖ presses on an action's confirmation card (bot/telegram/features/actions.py).

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

With imported data (SHOP_BACKEND=local) a ✅ becomes a request to the shop's people: the
customer reads that a person will confirm, and the staff (ADMIN_IDS' private chats, or
the operators' group when handoff is on) get a request card with ✅ Done / ✖ Refuse, in
the same stored reply. Only an admin (or anyone in the operators' group) may answer it;
Done tells the customer the action's usual result; Refuse asks the presser for the reason
(their next message in that chat, `build_refusal_router`), which the customer then reads
in a polite refusal. `ActionService.answer`/`refusal` make each answer count once.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from typing import TypeVar

from aiogram import Router
from aiogram.exceptions import TelegramAPIError
from aiogram.filters import Filter
from aiogram.methods import AnswerCallbackQuery, EditMessageReplyMarkup, TelegramMethod
from aiogram.types import CallbackQuery, Message

from bot.telegram.action_words import ACTION_WORDS, ActionStaffWords, staff_words
from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import conversation_of
from bot.telegram.formatting import markdown_to_messages
from bot.telegram.keyboards import (
    ActionButton,
    ActionChoice,
    RequestButton,
    RequestChoice,
    markup_to_json,
    request_keyboard,
)
from bot.telegram.sender import Sender
from bot.telegram.texts import Language, Texts, TextTable, language_for
from services.actions import (
    ActionService,
    AnswerKind,
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
_REQUEST_PREFIX = f"{RequestButton.__prefix__}{RequestButton.__separator__}"


class IsActionPress(Filter):
    """A press whose data claims to be an action card's (validated by the handler)."""

    async def __call__(self, query: CallbackQuery) -> bool:
        return (query.data or "").startswith(_PREFIX)


class IsRequestPress(Filter):
    """A press whose data claims to be a request card's (validated by the handler)."""

    async def __call__(self, query: CallbackQuery) -> bool:
        return (query.data or "").startswith(_REQUEST_PREFIX)


def result_words(outcome: Outcome, shop_texts: Texts, language: str) -> str:
    if outcome.kind is ResultKind.DONE and outcome.words:
        return words_in(outcome.words, language)
    texts = shop_texts.of(ACTION_WORDS)
    if outcome.kind is ResultKind.REFUSED:
        return f"{texts.action_refused} {outcome.refusal or ''}".strip()
    if outcome.kind is ResultKind.FAILED and outcome.reason == NOT_SUPPORTED:
        return texts.action_not_supported
    return {
        ResultKind.DONE: texts.action_already,
        ResultKind.DECLINED: texts.action_declined,
        ResultKind.STATE_CHANGED: texts.action_state_changed,
        ResultKind.FAILED: texts.action_failed,
        ResultKind.CHECKING: texts.action_checking,
        ResultKind.NEEDS_ATTENTION: texts.action_needs_attention,
        ResultKind.REQUESTED: texts.action_requested,
    }[outcome.kind]


def press_note(press: Press, shop_texts: Texts) -> str:
    """The button's note for a press that changed nothing: the honest word for it."""
    texts = shop_texts.of(ACTION_WORDS)
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


def operators_line(row: ActionRow, outcome: Outcome, words: ActionStaffWords) -> str:
    """The operators' one line about an executed action (no customer's words)."""
    reference = f", {outcome.reference}" if outcome.reference else ""
    return words.action_done(
        action=row.action,
        order=row.order_number,
        reference=reference,
        customer=row.user_id,
        op=row.operation_id[:8],
    )


def request_card(row: ActionRow, details: str, words: ActionStaffWords) -> str:
    """The staff's card of a request (the action's details: the customer's card)."""
    return words.request_card(
        action=row.action,
        order=row.order_number,
        customer=row.user_id,
        op=row.operation_id[:8],
        details=details,
    )


def request_cards(row: ActionRow, details: str, staff: Staff) -> tuple[StoredReply, ...]:
    markup = markup_to_json(request_keyboard(row.operation_id, staff.words))
    text = request_card(row, details, staff.words)
    return tuple(
        StoredReply(html=html.escape(text), plain=text, chat_id=chat, reply_markup=markup)
        for chat in staff.chats
    )


class Staff:
    """Who answers requests: the operators' group when handoff is on (anyone in it), else
    the admins (ADMIN_IDS) in their private chats; an admin may answer anywhere. They
    read the shop's language (`texts`' default), as the shop worded it."""

    def __init__(
        self, admin_ids: frozenset[int], operator_chat_id: int | None, texts: TextTable
    ) -> None:
        self.admin_ids = admin_ids
        self.operator_chat_id = operator_chat_id
        self.words = staff_words(texts)
        self.language: Language = texts.default_language

    @property
    def chats(self) -> tuple[int, ...]:
        if self.operator_chat_id is not None:
            return (self.operator_chat_id,)
        return tuple(sorted(self.admin_ids))

    def may_answer(self, user_id: int, chat_id: int) -> bool:
        return user_id in self.admin_ids or chat_id == self.operator_chat_id


def customer_words(
    texts: TextTable, service: ActionService
) -> tuple[Callable[[ActionRow, Outcome], str], Callable[[ActionRow, Outcome], str]]:
    """The customer's result words (in the language of their press) and its history line."""

    def said(row: ActionRow, outcome: Outcome) -> str:
        language = language_for(row.language)
        return result_words(outcome, texts.by_language[language], language)

    def history(row: ActionRow, outcome: Outcome) -> str:
        return f"{service.card_words(row, language_for(row.language))}\n{said(row, outcome)}"

    return said, history


def build_request_router(
    deps: HandlerDeps, service: ActionService, staff: Staff, texts: TextTable
) -> Router:
    """✅ Done / ✖ Refuse on a request card, by the shop's people."""
    router = Router(name="action_requests")
    sender = deps.sender
    said, history = customer_words(texts, service)

    @router.callback_query(IsRequestPress())
    async def on_request(query: CallbackQuery, ctx: UpdateContext) -> None:
        parsed = RequestButton.read(query.data)
        message = query.message if isinstance(query.message, Message) else None
        if parsed is None or message is None:
            await _ack(sender, query, ctx.texts.of(ACTION_WORDS).action_no_longer_offered)
            await ctx.outbox.ignore("request_no_such_card")
            return
        if not staff.may_answer(query.from_user.id, message.chat.id):
            await _ack(sender, query, ctx.texts.of(ACTION_WORDS).action_not_yours)
            await ctx.outbox.ignore("request_not_staff")
            return
        answer = await service.answer(
            parsed.operation_id,
            done=parsed.choice is RequestChoice.DONE,
            by=query.from_user.id,
            chat_id=message.chat.id,
            history=history,
        )
        row = answer.row
        if answer.kind is AnswerKind.ASK_REASON and row is not None:
            await _ack(sender, query, None)
            await ctx.outbox.send(staff.words.for_order("staff_ask_reason", row.order_number))
            return
        if answer.kind is AnswerKind.DONE and row is not None and answer.outcome is not None:
            await _ack(sender, query, None)
            await _remove_buttons(sender, message)
            to_customer = said(row, answer.outcome)
            await ctx.outbox.send(
                staff.words.for_order("staff_recorded_done", row.order_number),
                also=(await _to(service, row, to_customer),),
            )
            return
        already = answer.kind is AnswerKind.ALREADY
        note = staff.words.staff_already_answered if already else None
        await _ack(sender, query, note or ctx.texts.of(ACTION_WORDS).action_no_longer_offered)
        await ctx.outbox.ignore(f"request_{answer.kind}")

    return router


class AwaitsRefusalReason(Filter):
    """A text message from a person the bot asked for a refusal's reason, in that chat."""

    def __init__(self, service: ActionService, staff: Staff) -> None:
        self._service = service
        self._staff = staff

    async def __call__(self, message: Message) -> bool:
        user = message.from_user
        if user is None or not message.text or message.text.startswith("/"):
            return False
        if not self._staff.may_answer(user.id, message.chat.id):
            return False
        return await self._service.awaits_reason(user.id, message.chat.id)


def build_refusal_router(service: ActionService, staff: Staff, texts: TextTable) -> Router:
    """The reason of a refusal: the next message of the person who pressed ✖ Refuse."""
    router = Router(name="action_refusals")
    said, history = customer_words(texts, service)

    @router.message(AwaitsRefusalReason(service, staff))
    async def on_reason(message: Message, ctx: UpdateContext) -> None:
        assert message.from_user is not None and message.text is not None
        answer = await service.refusal(
            user_id=message.from_user.id,
            chat_id=message.chat.id,
            text=message.text,
            history=history,
        )
        if answer is None or answer.row is None:
            await ctx.outbox.ignore("refusal_not_asked")
            return
        row = answer.row
        if answer.kind is AnswerKind.REFUSED and answer.outcome is not None:
            await ctx.outbox.send(
                staff.words.for_order("staff_refused", row.order_number),
                also=(await _to(service, row, said(row, answer.outcome)),),
            )
            return
        await ctx.outbox.send(staff.words.for_order("staff_refusal_already", row.order_number))

    return router


async def _to(service: ActionService, row: ActionRow, markdown: str) -> StoredReply:
    """The customer's message about their action: to their chat, through the owner's
    business connection when the action was asked for in one of the owner's chats."""
    (part, *_) = markdown_to_messages(markdown)
    chat_id, connection_id = await service.address_of(row)
    return StoredReply(
        html=part.html, plain=part.plain, chat_id=chat_id, business_connection_id=connection_id
    )


def build_action_router(
    deps: HandlerDeps,
    service: ActionService,
    *,
    operator_chat_id: int | None,
    staff: Staff,
) -> Router:
    """The customer's ✅/✖ press on an action's card (the module docstring: in order)."""
    router = Router(name="actions")
    sender = deps.sender

    @router.callback_query(IsActionPress())
    async def on_action(query: CallbackQuery, ctx: UpdateContext) -> None:
        texts = ctx.texts
        words = texts.of(ACTION_WORDS)
        parsed = ActionButton.read(query.data)
        message = query.message if isinstance(query.message, Message) else None
        if parsed is None or message is None:
            await _ack(sender, query, words.action_no_longer_offered)
            await ctx.outbox.ignore("action_no_such_card")
            return

        def history(row: ActionRow, outcome: Outcome) -> str:
            said = result_words(outcome, texts, ctx.language)
            return f"{service.card_words(row, ctx.language)}\n{said}"

        press = await service.press(
            parsed.operation_id,
            chat_id=conversation_of(message),  # a business chat: its own conversation
            user_id=query.from_user.id,
            update_id=ctx.update_id,
            confirm=parsed.choice is ActionChoice.CONFIRM,
            history=history,
            steps=_press_steps(sender, query, message, texts),
            language=ctx.language,
        )
        if press.kind is ClaimKind.EXPIRED:
            await _ack(sender, query, None)
            await ctx.outbox.send(words.action_expired)
            return
        if press.outcome is None or press.row is None:
            await _ack(sender, query, press_note(press, texts))
            await ctx.outbox.ignore(f"action_{press.kind}")
            return
        outcome, row = press.outcome, press.row
        if press.kind is ClaimKind.DECLINED:
            await _ack(sender, query, None)
        said = result_words(outcome, texts, ctx.language)
        also = _others_told(service, row, outcome, operator_chat_id, staff)
        await ctx.outbox.send(said, also=also)

    return router


def _press_steps(
    sender: Sender, query: CallbackQuery, message: Message, texts: Texts
) -> PressSteps:
    """Telegram's part on the way of a press: the button's "working on it" note before
    the shop is asked (the customer's client stops waiting), the card's buttons removed
    once it is answered."""

    async def working() -> None:
        await _ack(sender, query, texts.of(ACTION_WORDS).action_working)

    async def settled() -> None:
        await _remove_buttons(sender, message)

    return PressSteps(working=working, settled=settled)


def _others_told(
    service: ActionService,
    row: ActionRow,
    outcome: Outcome,
    operator_chat_id: int | None,
    staff: Staff,
) -> tuple[StoredReply, ...]:
    """Who besides the customer hears of the result, in the same stored reply: the
    operators' one line of an executed action (handoff on), or the staff's request cards
    (imported data: a person carries it out)."""
    if outcome.kind is ResultKind.DONE and operator_chat_id is not None:
        line = operators_line(row, outcome, staff.words)
        return (StoredReply(html=html.escape(line), plain=line, chat_id=operator_chat_id),)
    if outcome.kind is ResultKind.REQUESTED:
        return request_cards(row, service.card_words(row, staff.language), staff)
    return ()


def build_actions_off_router(deps: HandlerDeps) -> Router:
    """Actions off (ACTIONS_ENABLED empty, or the shop does none): a press on a card sent
    while they were on gets the honest note, so the customer's client stops waiting."""
    router = Router(name="actions_off")

    @router.callback_query(IsActionPress())
    async def on_old_card(query: CallbackQuery, ctx: UpdateContext) -> None:
        await _ack(deps.sender, query, ctx.texts.of(ACTION_WORDS).action_no_longer_offered)
        await ctx.outbox.ignore("action_off")

    return router


async def _ack(sender: Sender, query: CallbackQuery, text: str | None) -> None:
    await _cosmetic(sender, AnswerCallbackQuery(callback_query_id=query.id, text=text))


async def _remove_buttons(sender: Sender, message: Message) -> None:
    await _cosmetic(
        sender,
        EditMessageReplyMarkup(
            chat_id=message.chat.id,
            message_id=message.message_id,
            business_connection_id=message.business_connection_id,
        ),
    )


async def _cosmetic(sender: Sender, method: TelegramMethod[T]) -> None:
    try:
        await sender.call(method)
    except TelegramAPIError as exc:
        log.warning("%s failed (%s); the action goes on", method.__api_method__, type(exc).__name__)
