"""Handoff to a person: /operator, the "talk to a person" button, mirrors and relays.

Included only when OPERATOR_CHAT_ID is set (bot/telegram/features/handoff.py); every builder
takes the handoff desk it works with.

- Customers (private chats only): `/operator` or the button (`HandoffButton`,
  from the customer's own private chat) opens a handoff: the customer is told, in their
  language, that a person will answer, and the brief goes to their topic. While it is
  open, their messages (text, photos, documents) are copied into the topic and the AI
  does not answer them; other kinds get a short note.
- Operators: only messages inside a topic the bot created for a customer, in
  OPERATOR_CHAT_ID, are relayed to that customer (text, photos, documents, as copies).
  Anything else in that group — the General topic, other topics, service messages — is
  ignored; a message from any other chat is never taken for an operator's, whatever
  `message_thread_id` it carries. `/close` in the topic, or closing the topic, ends the
  handoff: the customer is told and the AI answers again.

Every part goes through the update's outbox: stored in the inbox, then sent by the
sender (paced, classified), and resumed — never repeated — after a crash.
"""

from __future__ import annotations

import logging
from typing import Any

from aiogram import Router
from aiogram.enums import ChatType
from aiogram.filters import Command, Filter
from aiogram.methods import AnswerCallbackQuery
from aiogram.types import CallbackQuery, Message, User

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import AddressedToBot, IsCommand, caller_of
from bot.telegram.handoff import HandoffDesk
from bot.telegram.handoff_view import HANDOFF_WORDS
from bot.telegram.keyboards import HandoffButton
from bot.telegram.limits import within_limits
from bot.telegram.menu import MenuEntry
from bot.telegram.outbox import Outbox
from bot.telegram.routers.chat import refusal_of, request_key
from bot.telegram.texts import Texts
from services.chat import ChatService
from storage.handoffs import Handoff, HandoffSource

log = logging.getLogger(__name__)

# Message kinds a copy carries between a customer and operators
RELAYED_KINDS = frozenset({"text", "photo", "document"})
# Kinds that are content (not a service message): told "not passed on" when not relayed
_CONTENT_KINDS = frozenset(
    {
        "sticker",
        "voice",
        "video",
        "video_note",
        "audio",
        "animation",
        "location",
        "contact",
        "poll",
        "dice",
        "venue",
        "story",
    }
)


def history_text(message: Message) -> str | None:
    """A relayed message as the history keeps it; None for a kind that is not relayed."""
    if message.text:
        return message.text
    caption = f" {message.caption}" if message.caption else ""
    if message.photo:
        return f"[photo]{caption}"
    if message.document:
        return f"[document]{caption}"
    if message.voice:  # operators listen to it in the topic; the AI is not asked
        return "[voice message]"
    if message.video_note:
        return "[video message]"
    return None


class InChat(Filter):
    def __init__(self, chat_id: int) -> None:
        self._chat_id = chat_id

    async def __call__(self, message: Message) -> bool:
        return message.chat.id == self._chat_id


class InOpenHandoff(Filter):
    """A private chat with an open handoff; the handoff row goes to the handler.

    Not the update whose own turn opened the handoff and was stored before a crash cut its
    reply off: that turn is replayed (bot/telegram/routers/chat.py), and its reply announces the
    handoff as it would have without the crash."""

    def __init__(self, handoff: HandoffDesk, chat_service: ChatService) -> None:
        self._handoff = handoff
        self._chat_service = chat_service

    async def __call__(self, message: Message, ctx: UpdateContext) -> bool | dict[str, Any]:
        if message.chat.type != ChatType.PRIVATE:
            return False
        current = await self._handoff.service.current(message.chat.id)
        if current is None:
            return False
        if current.briefed_at is None and await self._chat_service.answered(
            request_key(ctx.update_id)
        ):
            return False  # its own turn opened it (a turn never runs in a handoff)
        return {"open_handoff": current}


async def _begin(
    chat_id: int,
    user: User | None,
    *,
    source: HandoffSource,
    language: str,
    texts: Texts,
    handoff: HandoffDesk,
    outbox: Outbox,
) -> None:
    started = await handoff.service.start(chat_id, source=source)
    if not started.new and started.handoff.briefed_at is not None:
        await outbox.send_parts(handoff.notice(chat_id, texts.of(HANDOFF_WORDS).handoff_already))
        return
    topic_id = await handoff.topic_for(chat_id, user, language, reopen=True)
    parts = [
        *handoff.notice(chat_id, handoff.started_notice(texts)),
        await handoff.brief_part(started.handoff, topic_id),
    ]
    await outbox.send_parts(parts)
    await handoff.service.mark_briefed(started.handoff.id)
    log.info("handoff %s started in chat %s (%s)", started.handoff.id, chat_id, source)


# the customers' menu entries of the handoff (bot/telegram/menu.py)
MENU = (MenuEntry("operator", lambda t: t.of(HANDOFF_WORDS).menu_operator),)


def build_handoff_commands_router(handoff: HandoffDesk) -> Router:
    """/operator; included among the command routers (before the unknown-command one)."""
    router = Router(name="handoff_commands")
    router.message.filter(IsCommand(), AddressedToBot())

    @router.message(Command("operator"))
    async def operator(message: Message, ctx: UpdateContext) -> None:
        if not caller_of(message).private_chat:
            await ctx.outbox.send(ctx.texts.of(HANDOFF_WORDS).handoff_private_only)
            return
        await _begin(
            message.chat.id,
            message.from_user,
            source="command",
            language=ctx.language,
            texts=ctx.texts,
            handoff=handoff,
            outbox=ctx.outbox,
        )

    return router


def build_handoff_button_router(deps: HandlerDeps, handoff: HandoffDesk) -> Router:
    """The "talk to a person" button (`HandoffButton`: "handoff:start")."""
    router = Router(name="handoff_button")

    @router.callback_query(HandoffButton.filter())
    async def button(callback: CallbackQuery, ctx: UpdateContext) -> None:
        outbox = ctx.outbox
        try:  # stops the button's spinner; cosmetic
            await deps.sender.call(AnswerCallbackQuery(callback_query_id=callback.id))
        except Exception as exc:
            log.debug("answerCallbackQuery: %s", type(exc).__name__)
        message = callback.message
        own_private_chat = (
            message is not None
            and message.chat.type == ChatType.PRIVATE
            and message.chat.id == callback.from_user.id
        )
        if message is None or not own_private_chat:
            await outbox.ignore("handoff_button_not_private")
            return
        await _begin(
            message.chat.id,
            callback.from_user,
            source="button",
            language=ctx.language,
            texts=ctx.texts,
            handoff=handoff,
            outbox=outbox,
        )

    return router


def build_customer_handoff_router(deps: HandlerDeps, handoff: HandoffDesk) -> Router:
    """A customer's messages while their handoff is open: copied to the topic, no AI."""
    router = Router(name="handoff_customer")
    router.message.filter(InOpenHandoff(handoff, deps.chat_service))

    @router.message()
    async def mirror(message: Message, ctx: UpdateContext, open_handoff: Handoff) -> None:
        if not await within_limits(message, ctx, deps.limiter):
            return
        outbox = ctx.outbox
        text = history_text(message)
        if text is None:
            await outbox.send(ctx.texts.of(HANDOFF_WORDS).handoff_not_relayed)
            return
        # the chat path's checks: these words would reach the model after the handoff
        refusal = refusal_of(text, ctx.texts, deps.max_input_chars)
        if refusal is not None:
            await outbox.send(refusal)
            return
        chat_id = message.chat.id
        await handoff.service.customer_said(chat_id, update_id=ctx.update_id, text=text)
        topic_id = await handoff.topic_for(chat_id, message.from_user, ctx.language, reopen=False)
        parts = []
        if open_handoff.briefed_at is None:  # requested by the model, brief not out yet
            parts.append(await handoff.brief_part(open_handoff, topic_id))
        parts.append(handoff.copy_to_topic(topic_id, chat_id, message.message_id))
        await outbox.send_parts(parts)
        if open_handoff.briefed_at is None:
            await handoff.service.mark_briefed(open_handoff.id)

    return router


class InHandoffTopic(Filter):
    """A message inside a topic the bot created for a customer; the customer's chat id
    and the topic id go to the handler."""

    def __init__(self, handoff: HandoffDesk) -> None:
        self._handoff = handoff

    async def __call__(self, message: Message) -> bool | dict[str, Any]:
        if not message.is_topic_message or message.message_thread_id is None:
            return False
        customer = await self._handoff.service.customer_of(
            message.chat.id, message.message_thread_id
        )
        if customer is None:
            return False
        return {"customer_chat_id": customer, "topic_id": message.message_thread_id}


async def _close(
    customer_chat_id: int,
    topic_id: int,
    *,
    reason: str,
    handoff: HandoffDesk,
    outbox: Outbox,
    tell_topic: bool,
) -> None:
    closed = await handoff.service.close(
        customer_chat_id, reason="command" if reason == "command" else "topic_closed"
    )
    if not closed:
        if tell_topic:
            await outbox.send_parts([handoff.to_topic(topic_id, handoff.words.operator_not_open)])
        else:
            await outbox.ignore("handoff_not_open")
        return
    topic = await handoff.service.topic_of(customer_chat_id)
    texts = handoff.customer_texts(topic.language if topic is not None else "")
    parts = handoff.notice(customer_chat_id, texts.of(HANDOFF_WORDS).handoff_closed)
    if tell_topic:
        parts.append(handoff.to_topic(topic_id, handoff.words.operator_closed))
    await outbox.send_parts(parts)
    if tell_topic:  # operators see the topic closed; its service message changes nothing
        await handoff.close_topic(topic_id)
    log.info("handoff of chat %s closed (%s)", customer_chat_id, reason)


class IsTopicClosed(Filter):
    async def __call__(self, message: Message) -> bool:
        return message.forum_topic_closed is not None


def build_operator_router(handoff: HandoffDesk) -> Router:
    """Everything in OPERATOR_CHAT_ID; included first, so no other router sees that chat."""
    router = Router(name="operators")
    router.message.filter(InChat(handoff.operator_chat_id))
    in_topic = InHandoffTopic(handoff)

    @router.message(IsTopicClosed(), in_topic)
    async def topic_closed(
        message: Message, ctx: UpdateContext, customer_chat_id: int, topic_id: int
    ) -> None:
        await _close(
            customer_chat_id,
            topic_id,
            reason="topic_closed",
            handoff=handoff,
            outbox=ctx.outbox,
            tell_topic=False,
        )

    @router.message(IsCommand(), Command("close"), in_topic)
    async def close(
        message: Message, ctx: UpdateContext, customer_chat_id: int, topic_id: int
    ) -> None:
        await _close(
            customer_chat_id,
            topic_id,
            reason="command",
            handoff=handoff,
            outbox=ctx.outbox,
            tell_topic=True,
        )

    @router.message(in_topic)
    async def relay(
        message: Message, ctx: UpdateContext, customer_chat_id: int, topic_id: int
    ) -> None:
        outbox = ctx.outbox
        text = history_text(message)
        if text is None:
            if message.content_type in _CONTENT_KINDS:
                not_relayed = handoff.words.operator_not_relayed
                await outbox.send_parts([handoff.to_topic(topic_id, not_relayed)])
            else:  # a service message (topic created, reopened, pinned…)
                await outbox.ignore("handoff_service_message")
            return
        current = await handoff.service.current(customer_chat_id)
        if current is None:
            await outbox.send_parts([handoff.to_topic(topic_id, handoff.words.operator_not_open)])
            return
        await handoff.service.operator_said(current, update_id=ctx.update_id, text=text)
        await outbox.send_parts([handoff.copy_to_customer(customer_chat_id, message.message_id)])

    @router.message()
    async def elsewhere(message: Message, ctx: UpdateContext) -> None:
        """The General topic, other topics, service messages: not the bot's business."""
        await ctx.outbox.ignore("operator_chat_other")

    return router
