"""Business mode's Telegram side: the owner's connection, their customers' messages, and
the owner's controls in their private chat with the bot (bot/telegram/features/business.py).

Update types of their own (`business_connection`, `business_message`,
`edited_business_message`, `deleted_business_messages`), so no other router sees them;
each is stored in the inbox before it is acknowledged and handled once, like any update.
What is decided is services/business.py's; here it becomes Telegram:

- a connection: stored when it is an owner's (else one WARNING, nothing else), the owner
  told what changed in their chat with the bot; `can_reply` revoked is one WARNING;
- a customer's text in the owner's chat: a turn like in the bot's chat (the same chat
  service, limits and input checks; the customer is the chat's user, in a conversation
  of its own), "typing…" through the connection and the answer posted as the owner
  (the update's outbox carries the connection: bot/telegram/processing.py). No drafts,
  no 👍/👎, no "notify me" (order updates never go through the owner's chats), no
  contact button (the hint points to the bot's chat instead). An answer whose turn ran
  while the owner wrote in the chat is not sent. `request_human` there asks the owner,
  not the operators: the owner is told, the chat paused, the customer told the owner
  will answer;
- the owner's own message in a chat: silence there, and one notice with a button that
  gives the chat back; the bot's own messages (echoed by Telegram) change nothing;
- approval mode: the answer goes to the owner as a draft card, Send / Edit / Discard;
  an action the turn proposed goes with it: Send (or the owner's rewrite) posts its
  ✅/✖ card in the customer's chat, where a press takes the same path as in the bot's
  chat (bot/telegram/routers/actions.py); Discard withdraws it;
- an edit of a customer's message is not answered again (the answer stands); a message
  the customer deleted before its answer was posted is not answered (a running turn's
  answer is not sent, a waiting draft is discarded) and its turn leaves the memory.
"""

from __future__ import annotations

import html
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiogram import Router
from aiogram.exceptions import TelegramAPIError
from aiogram.filters import Command, CommandObject, Filter
from aiogram.filters.callback_data import CallbackData
from aiogram.methods import AnswerCallbackQuery, EditMessageReplyMarkup, GetBusinessConnection
from aiogram.types import (
    BusinessConnection,
    BusinessMessagesDeleted,
    CallbackQuery,
    Chat,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
)

from bot.runtime.intake import SignalHook
from bot.runtime.languages import Language
from bot.telegram.channel import reply_target_of
from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.formatting import markdown_to_messages
from bot.telegram.keyboards import markup_to_json
from bot.telegram.limits import within_limits
from bot.telegram.routers.admin import StatsSection
from bot.telegram.routers.chat import ask_model, refusal_of
from bot.telegram.sender import Sender
from bot.telegram.stats_view.table import TableSection, kv
from bot.telegram.stats_view.wording import format_int
from bot.telegram.texts import language_for
from bot.telegram.turn_view import ChatSide, action_card, turn_view
from services.business import (
    BusinessService,
    Change,
    Decision,
    DraftCard,
    Incoming,
    Verdict,
)
from services.offers import Offer, OwnerWillAnswer
from services.stats import StatsReport
from storage.business import Connection, Draft
from storage.inbox import StoredReply

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BusinessWords:
    """The feature's words by language, and the pause they mention."""

    by_language: Mapping[Language, Mapping[str, str]]
    pause_hours: float

    def __call__(self, language: str, key: str, **values: Any) -> str:
        words = self.by_language[language_for(language)]
        hours = f"{self.pause_hours:g}"
        return words[key].format(hours=hours, **values)


class ResumeButton(CallbackData, prefix="bzr"):
    """ "Give it back to the bot" under the owner's pause notice: `bzr:<chat id>`."""

    chat_id: int


class DraftButton(CallbackData, prefix="bzd"):
    """Send / Edit / Discard on an approval draft: `bzd:<draft id>:s|e|d`."""

    draft_id: str
    choice: str


def connection_of(connection: BusinessConnection) -> Connection:
    """What we keep of Telegram's BusinessConnection (`rights.can_reply` since Bot API
    9.0; the older top-level `can_reply` when a server still sends only that)."""
    if connection.rights is not None:
        can_reply = bool(connection.rights.can_reply)
    else:
        can_reply = bool(connection.can_reply)
    return Connection(
        connection_id=connection.id,
        owner_id=connection.user.id,
        owner_chat_id=connection.user_chat_id,
        enabled=connection.is_enabled,
        can_reply=can_reply,
        approval=False,
    )


def _to_owner(chat_id: int, text: str, markup: InlineKeyboardMarkup | None = None) -> StoredReply:
    return StoredReply(
        html=html.escape(text),
        plain=text,
        chat_id=chat_id,
        reply_markup=None if markup is None else markup_to_json(markup),
    )


def _name_of(chat: Chat) -> str:
    name = " ".join(p for p in (chat.first_name, chat.last_name) if p)
    return name or (f"@{chat.username}" if chat.username else str(chat.id))


_CHANGE_WORDS = {
    Change.CONNECTED: "connected",
    Change.DISCONNECTED: "disconnected",
    Change.REPLY_REVOKED: "reply_revoked",
    Change.REPLY_GRANTED: "reply_granted",
}


def build_business_router(
    deps: HandlerDeps, service: BusinessService, words: BusinessWords
) -> Router:
    """The business update types (see the module docstring)."""
    router = Router(name="business")

    @router.business_connection()
    async def on_connection(connection: BusinessConnection, ctx: UpdateContext) -> None:
        await _connection_changed(connection, ctx, service, words)

    @router.business_message()
    async def on_business_message(message: Message, ctx: UpdateContext) -> None:
        await _customer_message(message, ctx, deps, service, words)

    @router.edited_business_message()
    async def on_edited(_message: Message, ctx: UpdateContext) -> None:
        await ctx.outbox.ignore("business_edited")

    @router.deleted_business_messages()
    async def on_deleted(deleted: BusinessMessagesDeleted, ctx: UpdateContext) -> None:
        await _customer_deleted(deleted, ctx, service, words)

    return router


async def _customer_deleted(
    deleted: BusinessMessagesDeleted,
    ctx: UpdateContext,
    service: BusinessService,
    words: BusinessWords,
) -> None:
    """The customer deleted messages: drafts that answered them are dropped, and the
    owner is told (their draft's buttons would otherwise only say "Already decided")."""
    connection_id, chat_id = deleted.business_connection_id, deleted.chat.id
    dropped = await service.deleted(connection_id, chat_id, list(deleted.message_ids))
    connection = await service.connection(connection_id) if dropped else None
    if connection is None:
        await ctx.outbox.ignore("business_deleted")
        return
    log.info("business chat %s: the customer deleted a message; its draft is dropped", chat_id)
    notice = words(ctx.language, "draft_dropped", name=_name_of(deleted.chat))
    await ctx.outbox.send_parts([_to_owner(connection.owner_chat_id, notice)])


async def _connection_changed(
    connection: BusinessConnection,
    ctx: UpdateContext,
    service: BusinessService,
    words: BusinessWords,
) -> None:
    change = await service.connected(connection_of(connection))
    if change is Change.NOT_OWNER:
        log.warning(
            "business connection %s of account %s ignored: not one of the owners "
            "(BUSINESS_OWNER_IDS, or ADMIN_IDS when it is empty)",
            connection.id,
            connection.user.id,
        )
        await ctx.outbox.ignore("business_not_owner")
        return
    if change is Change.REPLY_REVOKED:
        log.warning(
            "business connection %s: the owner took away can_reply; no answers in "
            "their chats until it is given back",
            connection.id,
        )
    else:
        log.info("business connection %s: %s", connection.id, change.value)
    key = _CHANGE_WORDS.get(change)
    if key is None:
        await ctx.outbox.ignore("business_unchanged")
        return
    notice = words(ctx.language, key)
    await ctx.outbox.send_parts([_to_owner(connection.user_chat_id, notice)])


async def _customer_message(
    message: Message,
    ctx: UpdateContext,
    deps: HandlerDeps,
    service: BusinessService,
    words: BusinessWords,
) -> None:
    """A business message: the service's verdict, then silence, a notice, an answer or
    a draft."""
    incoming = _incoming(message)
    decision = await service.decide(incoming)
    if decision.verdict is Verdict.UNKNOWN_CONNECTION:
        decision = await _learn_connection(deps.sender, service, incoming)
    verdict = decision.verdict
    if verdict is Verdict.OWNER_WROTE:
        await _owner_took_over(message, ctx, decision, words)
        return
    if verdict not in (Verdict.ANSWER, Verdict.DRAFT):
        if verdict is Verdict.NOT_SERVED:
            log.info("business message of connection %s not served", incoming.connection_id)
        elif verdict is Verdict.TOO_OLD:
            log.info(
                "business message of connection %s is %.0f h old, past Telegram's 24-hour "
                "reply window: not answered",
                incoming.connection_id,
                (time.time() - incoming.date) / 3600,
            )
        await ctx.outbox.ignore(f"business_{verdict.value}")
        return
    if service.was_deleted(incoming.connection_id, incoming.chat_id, message.message_id):
        await ctx.outbox.ignore("business_deleted_before_answer")  # the model is not asked
        return
    if not message.text:  # a photo, a voice note, a sticker: the owner's to answer
        await ctx.outbox.ignore("business_not_text")
        return
    if not await within_limits(message, ctx, deps.limiter):
        return
    refusal = refusal_of(message.text, ctx.texts, deps.max_input_chars)
    if refusal is not None:
        await ctx.outbox.send(refusal)
    elif verdict is Verdict.DRAFT:
        await _draft_for_owner(message, ctx, deps, service, words, decision, incoming)
    else:
        await _answer(message, ctx, deps, service, words, decision, incoming)


def _incoming(message: Message) -> Incoming:
    assert message.business_connection_id is not None
    return Incoming(
        connection_id=message.business_connection_id,
        chat_id=message.chat.id,
        from_id=message.from_user.id if message.from_user is not None else None,
        sent_by_bot=message.sender_business_bot is not None,
        date=message.date.timestamp(),
    )


async def _learn_connection(
    sender: Sender, service: BusinessService, incoming: Incoming
) -> Decision:
    """A message of a connection made before the bot saw it (e.g. while it was off):
    Telegram's getBusinessConnection says whose it is."""
    try:
        connection = await sender.call(
            GetBusinessConnection(business_connection_id=incoming.connection_id)
        )
    except TelegramAPIError as exc:
        log.warning(
            "business connection %s unknown, getBusinessConnection failed (%s)",
            incoming.connection_id,
            type(exc).__name__,
        )
        return Decision(Verdict.NOT_SERVED)
    change = await service.connected(connection_of(connection))
    if change is Change.NOT_OWNER:
        log.warning(
            "business connection %s of account %s ignored: not one of the owners",
            connection.id,
            connection.user.id,
        )
        return Decision(Verdict.NOT_SERVED)
    return await service.decide(incoming)


async def _owner_took_over(
    message: Message, ctx: UpdateContext, decision: Decision, words: BusinessWords
) -> None:
    """The owner wrote by hand: the bot is silent in the chat; the owner is told once
    per pause, with the button that gives the chat back."""
    connection = decision.connection
    assert connection is not None
    if not decision.newly_paused:
        await ctx.outbox.ignore("business_owner_wrote")
        return
    log.info("business chat %s: the owner took over", message.chat.id)
    button = InlineKeyboardButton(
        text=words(ctx.language, "give_back"),
        callback_data=ResumeButton(chat_id=message.chat.id).pack(),
    )
    notice = words(ctx.language, "paused", name=_name_of(message.chat))
    markup = InlineKeyboardMarkup(inline_keyboard=[[button]])
    await ctx.outbox.send_parts([_to_owner(connection.owner_chat_id, notice, markup)])


def _business_side(ctx: UpdateContext, words: BusinessWords, bot_username: str) -> ChatSide:
    """The owner's chat: one-to-one, no 👍/👎, no person button, no offers' rows (order
    updates never go through it), no contact button (a hint to the bot's chat)."""
    return ChatSide(
        private_chat=True,
        feedback_buttons=False,
        person_button=False,
        language=ctx.language,
        offer_rows=(),
        phone_hint=words(ctx.language, "customer_phone_hint", bot=bot_username),
    )


async def _answer(
    message: Message,
    ctx: UpdateContext,
    deps: HandlerDeps,
    service: BusinessService,
    words: BusinessWords,
    decision: Decision,
    incoming: Incoming,
) -> None:
    """A turn, "typing…" in the owner's chat meanwhile, then the answer as the owner —
    unless the owner wrote in the chat while it ran."""
    assert message.text is not None
    started = time.time()
    async with deps.responder.typing(reply_target_of(message)):
        reply = await ask_model(
            message, message.text, deps.chat_service, ctx.update_id, language=ctx.language
        )
    if await _not_posted(message, ctx, service, incoming, reply.turn_id, started):
        return
    me = await deps.sender.bot.me()
    view = turn_view(reply, ctx.texts, _business_side(ctx, words, me.username or ""))
    assert decision.connection is not None
    owner_chat = decision.connection.owner_chat_id
    asked = await _owner_asked(message, ctx, service, words, reply.offers, incoming, owner_chat)
    if asked is None:
        await ctx.outbox.send(view.text, turn_id=reply.turn_id, reply_markup=view.markup)
        return
    text = f"{view.text}\n\n{words(ctx.language, 'owner_will_answer')}"
    await ctx.outbox.send(text, turn_id=reply.turn_id, reply_markup=view.markup, also=[asked])


async def _not_posted(
    message: Message,
    ctx: UpdateContext,
    service: BusinessService,
    incoming: Incoming,
    turn_id: str | None,
    started: float | None,
) -> bool:
    """While the turn ran the customer deleted the message, or (`started` given) the owner
    wrote in the chat: the answer is not posted and leaves the conversation's memory
    (with the question, when the customer deleted it). True when it is not posted."""
    connection_id, chat_id = incoming.connection_id, incoming.chat_id
    if service.was_deleted(connection_id, chat_id, message.message_id):
        log.info("business chat %s: the customer deleted the message; not answered", chat_id)
        await service.not_read(turn_id, deleted=True)
        await ctx.outbox.ignore("business_deleted_before_answer")
        return True
    if started is not None and service.owner_wrote(connection_id, chat_id, started):
        log.info("business chat %s: the owner wrote during the turn; not sent", chat_id)
        await service.not_read(turn_id, deleted=False)
        await ctx.outbox.ignore("business_owner_took_over")
        return True
    return False


async def _owner_asked(
    message: Message,
    ctx: UpdateContext,
    service: BusinessService,
    words: BusinessWords,
    offers: tuple[Offer, ...],
    incoming: Incoming,
    owner_chat_id: int,
) -> StoredReply | None:
    """The model asked for a person (`request_human`): in the owner's chats that person
    is the owner — the chat is paused as if they had written, and they get a notice with
    the button that gives it back (None: nobody was asked for)."""
    asked = next((o for o in offers if isinstance(o, OwnerWillAnswer)), None)
    if asked is None:
        return None
    await service.owner_asked(incoming)
    log.info("business chat %s: a person was asked for; the owner is told", incoming.chat_id)
    button = InlineKeyboardButton(
        text=words(ctx.language, "give_back"),
        callback_data=ResumeButton(chat_id=incoming.chat_id).pack(),
    )
    notice = words(ctx.language, "owner_asked", name=_name_of(message.chat), reason=asked.reason)
    markup = InlineKeyboardMarkup(inline_keyboard=[[button]])
    return _to_owner(owner_chat_id, notice, markup)


async def _draft_for_owner(
    message: Message,
    ctx: UpdateContext,
    deps: HandlerDeps,
    service: BusinessService,
    words: BusinessWords,
    decision: Decision,
    incoming: Incoming,
) -> None:
    """Approval mode: the answer goes to the owner's chat with the bot as a draft card;
    an action the turn proposed is shown there and kept with the draft, so Send posts its
    ✅/✖ card in the customer's chat (Discard withdraws it)."""
    assert message.text is not None and decision.connection is not None
    reply = await ask_model(
        message, message.text, deps.chat_service, ctx.update_id, language=ctx.language
    )
    if await _not_posted(message, ctx, service, incoming, reply.turn_id, None):
        return  # deleted meanwhile (the owner writing does not stop a draft: they decide)
    me = await deps.sender.bot.me()
    side = _business_side(ctx, words, me.username or "")
    view = turn_view(reply, ctx.texts, side)
    proposed = action_card(reply, side)
    card = None
    if proposed is not None and view.markup is not None:
        keyboard = json.dumps(markup_to_json(view.markup))
        card = DraftCard(operation_id=proposed[0], words=proposed[1], markup=keyboard)
    draft = await service.new_draft(incoming, message.message_id, view.text, reply.turn_id, card)
    owner_language = ctx.language  # the owner reads the card in the customer's language
    text = words(owner_language, "draft", name=_name_of(message.chat), text=view.text)
    if card is not None:
        text = f"{text}\n\n{words(owner_language, 'draft_action')}"
    buttons = [
        InlineKeyboardButton(
            text=words(owner_language, key),
            callback_data=DraftButton(draft_id=draft.draft_id, choice=key[0]).pack(),
        )
        for key in ("send", "edit", "discard")
    ]
    markup = InlineKeyboardMarkup(inline_keyboard=[buttons])
    owner_chat = decision.connection.owner_chat_id
    asked = await _owner_asked(message, ctx, service, words, reply.offers, incoming, owner_chat)
    parts = [_to_owner(owner_chat, text, markup)]
    await ctx.outbox.send_parts(parts if asked is None else [*parts, asked])


class FromOwnerInPrivate(Filter):
    """A message or press of one of the owners in their private chat with the bot."""

    def __init__(self, owners: frozenset[int]) -> None:
        self._owners = owners

    async def __call__(self, event: Message | CallbackQuery) -> bool:
        message = event if isinstance(event, Message) else event.message
        user = event.from_user
        if user is None or user.id not in self._owners or not isinstance(message, Message):
            return False
        return message.chat.id == user.id and message.business_connection_id is None


class RewritesDraft(Filter):
    """The owner's text while a draft of theirs waits for its rewrite (Edit)."""

    def __init__(self, service: BusinessService) -> None:
        self._service = service

    async def __call__(self, message: Message) -> bool | dict[str, Any]:
        if message.from_user is None or not message.text or message.text.startswith("/"):
            return False
        draft = await self._service.editing(message.from_user.id)
        return False if draft is None else {"draft_id": draft.draft_id}


def build_owner_router(deps: HandlerDeps, service: BusinessService, words: BusinessWords) -> Router:
    """The owner's controls in their private chat with the bot: /ai, the buttons, and
    the text of a draft they are rewriting."""
    router = Router(name="business_owner")
    owner_only = FromOwnerInPrivate(service.owners)
    router.message.filter(owner_only)
    router.callback_query.filter(owner_only)
    sender = deps.sender

    @router.message(Command("ai"))
    async def ai_command(message: Message, ctx: UpdateContext, command: CommandObject) -> None:
        assert message.from_user is not None
        await _ai(message.from_user.id, (command.args or "").lower().split(), ctx, service, words)

    @router.callback_query(ResumeButton.filter())
    async def on_resume(
        query: CallbackQuery, ctx: UpdateContext, callback_data: ResumeButton
    ) -> None:
        count = await service.give_back(query.from_user.id, callback_data.chat_id)
        await _ack(sender, query, words(ctx.language, "given_back", count=count))
        await _remove_buttons(sender, query)
        await ctx.outbox.ignore("business_given_back")

    @router.callback_query(DraftButton.filter())
    async def on_draft(
        query: CallbackQuery, ctx: UpdateContext, callback_data: DraftButton
    ) -> None:
        await _draft_pressed(query, ctx, callback_data, service, words, sender)

    @router.message(RewritesDraft(service))
    async def on_rewrite(message: Message, ctx: UpdateContext, draft_id: str) -> None:
        await _rewritten(message, ctx, draft_id, service, words)

    return router


async def _ai(
    owner: int, args: list[str], ctx: UpdateContext, service: BusinessService, words: BusinessWords
) -> None:
    """/ai on | /ai approval on|off | anything else: how to use it."""
    if not await service.connections_of(owner):
        await ctx.outbox.send(words(ctx.language, "no_connection"))
    elif args == ["on"]:
        count = await service.give_back(owner)
        await ctx.outbox.send(words(ctx.language, "given_back", count=count))
    elif args in (["approval", "on"], ["approval", "off"]):
        approval = args[1] == "on"
        await service.set_approval(owner, approval)
        await ctx.outbox.send(words(ctx.language, "approval_on" if approval else "approval_off"))
    else:
        await ctx.outbox.send(words(ctx.language, "ai_usage"))


async def _draft_pressed(
    query: CallbackQuery,
    ctx: UpdateContext,
    button: DraftButton,
    service: BusinessService,
    words: BusinessWords,
    sender: Sender,
) -> None:
    """Send / Edit / Discard: each draft is decided once (the service's conditional
    moves); Send and Edit only within the customer's 24-hour window."""
    draft = await service.draft(button.draft_id)
    language, choice = ctx.language, button.choice
    if draft is None:
        await _ack(sender, query, words(language, "decided"))
        await ctx.outbox.ignore("business_no_draft")
        return
    if choice in ("s", "e") and not service.in_window(draft):
        await service.discard(draft.draft_id)
        await _ack(sender, query, words(language, "too_old"))
        await _remove_buttons(sender, query)
        await ctx.outbox.ignore("business_draft_too_old")
        return
    if choice == "s" and await service.send(draft.draft_id):
        await _ack(sender, query, words(language, "sent"))
        await _remove_buttons(sender, query)
        await ctx.outbox.send_parts(_posted(draft, draft.text, draft.card_markup))
    elif choice == "e" and await service.edit(draft.draft_id):
        await _ack(sender, query, None)
        await ctx.outbox.send(words(language, "edit_prompt"))
    elif choice == "d" and await service.discard(draft.draft_id):
        await _ack(sender, query, words(language, "discarded"))
        await _remove_buttons(sender, query)
        await ctx.outbox.ignore("business_draft_discarded")
    else:
        await _ack(sender, query, words(language, "decided"))
        await ctx.outbox.ignore("business_draft_decided")


async def _rewritten(
    message: Message,
    ctx: UpdateContext,
    draft_id: str,
    service: BusinessService,
    words: BusinessWords,
) -> None:
    """The owner's rewrite of a draft: posted as they wrote it (plain text), once."""
    assert message.text is not None
    draft = await service.draft(draft_id)
    if draft is None or not service.in_window(draft):
        if draft is not None:
            await service.discard(draft_id)
        await ctx.outbox.send(words(ctx.language, "too_old"))
        return
    if not await service.send(draft_id, text=message.text):
        await ctx.outbox.send(words(ctx.language, "decided"))
        return
    text = message.text
    posted = StoredReply(
        html=html.escape(text),
        plain=text,
        chat_id=draft.chat_id,
        business_connection_id=draft.connection_id,
    )
    # the action card the draft carried follows the owner's words as its own message
    card = [] if draft.card is None else _posted(draft, draft.card, draft.card_markup)
    sent = words(ctx.language, "sent")
    await ctx.outbox.send_parts([posted, *card, _to_owner(message.chat.id, sent)])


def _posted(draft: Draft, markdown: str, markup: str | None) -> list[StoredReply]:
    """Markdown as the parts posted in the draft's customer's chat, as the owner; the
    action card's ✅/✖ (`markup`, JSON) under the last part."""
    parts = markdown_to_messages(markdown)
    return [
        StoredReply(
            html=part.html,
            plain=part.plain,
            chat_id=draft.chat_id,
            business_connection_id=draft.connection_id,
            reply_markup=json.loads(markup) if markup and i == len(parts) - 1 else None,
        )
        for i, part in enumerate(parts)
    ]


async def _ack(sender: Sender, query: CallbackQuery, text: str | None) -> None:
    try:
        await sender.call(AnswerCallbackQuery(callback_query_id=query.id, text=text))
    except TelegramAPIError as exc:
        log.warning("answerCallbackQuery failed (%s)", type(exc).__name__)


async def _remove_buttons(sender: Sender, query: CallbackQuery) -> None:
    message = query.message
    if not isinstance(message, Message):
        return
    try:
        await sender.call(
            EditMessageReplyMarkup(chat_id=message.chat.id, message_id=message.message_id)
        )
    except TelegramAPIError as exc:
        log.warning("editMessageReplyMarkup failed (%s)", type(exc).__name__)


def stored_signal(service: BusinessService) -> SignalHook:
    """Sees each update as it is stored: the owner's own message in a chat, or the
    customer's deletion of a message, stops the answer of a turn already running there
    (either would otherwise wait behind the turn in the chat's queue)."""

    def signal(payload: dict[str, Any]) -> None:
        deleted = payload.get("deleted_business_messages")
        if isinstance(deleted, dict):
            _note_deleted(service, deleted)
            return
        message = payload.get("business_message")
        if not isinstance(message, dict) or message.get("sender_business_bot"):
            return
        sender, chat = message.get("from"), message.get("chat")
        connection = message.get("business_connection_id")
        if isinstance(sender, dict) and isinstance(chat, dict) and isinstance(connection, str):
            from_id, chat_id = sender.get("id"), chat.get("id")
            if isinstance(from_id, int) and isinstance(chat_id, int):
                service.note_stored(connection, chat_id, from_id)

    return signal


def _note_deleted(service: BusinessService, deleted: dict[str, Any]) -> None:
    """A stored `deleted_business_messages` (BusinessMessagesDeleted, Bot API 7.2+)."""
    chat, connection = deleted.get("chat"), deleted.get("business_connection_id")
    ids = deleted.get("message_ids")
    if isinstance(chat, dict) and isinstance(connection, str) and isinstance(ids, list):
        chat_id = chat.get("id")
        if isinstance(chat_id, int):
            service.note_deleted(connection, chat_id, [i for i in ids if isinstance(i, int)])


def stats_section(service: BusinessService, words: BusinessWords) -> StatsSection:
    """/stats: the period's questions by channel (the bot's chat, the owner's chats)."""

    async def section(report: StatsReport) -> TableSection:
        in_bot, in_owner = await service.questions_by_channel(report.since or 0.0)

        def lines(language: Language) -> list[str]:
            return [
                kv(words(language, "stats_title"), "", indent=0).rstrip(),
                kv(words(language, "stats_bot"), format_int(in_bot, language)),
                kv(words(language, "stats_owner"), format_int(in_owner, language)),
            ]

        return lines

    return section
