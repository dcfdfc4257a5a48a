"""Customer messages: text goes to the chat service, anything else gets a polite note.

Cheap checks come first and never reach the model: per-user limits, empty text (made
only of characters that render as nothing: spaces, fillers, zero-width marks — see
services/text_visibility.py), text over MAX_INPUT_CHARS, non-text content. The typing
indicator covers the whole turn; in private chats, with STREAM_ANSWERS on, a draft
does instead (bot/drafts.py): "Thinking…", then the answer as it is written, with a
stop button.
"""

from __future__ import annotations

from typing import Any, Protocol

from aiogram import Bot, Router
from aiogram.types import Message, MessageGenerationStopped

from bot.drafts import Drafts
from bot.filters import AddressedToBot, HasText, caller_of, strip_bot_mention
from bot.keyboards import share_phone_keyboard
from bot.replies import customer_text
from bot.responder import Outbox, Responder
from bot.texts import Texts
from services.chat import ChatService
from services.loop_types import TurnReply
from services.text_visibility import has_visible_text


class LimitDecisionLike(Protocol):
    @property
    def allowed(self) -> bool: ...
    @property
    def notify(self) -> bool: ...


class MessageLimiter(Protocol):
    def check(self, user_id: int) -> LimitDecisionLike: ...


async def _within_limits(
    message: Message, outbox: Outbox, texts: Texts, limiter: MessageLimiter
) -> bool:
    # keyed by the sender (anonymous admins: by their group, not one shared placeholder id)
    decision = limiter.check(caller_of(message).key)
    if decision.allowed:
        return True
    if decision.notify:
        await outbox.send(texts.rate_limited_notice)
    else:
        await outbox.ignore("user_rate_limited")
    return False


def build_chat_router() -> Router:
    router = Router(name="chat")
    router.message.filter(AddressedToBot())

    @router.message(HasText())
    async def on_text(
        message: Message,
        bot: Bot,
        outbox: Outbox,
        texts: Texts,
        chat_service: ChatService,
        limiter: MessageLimiter,
        responder: Responder,
        max_input_chars: int,
        inbox_update_id: int,
        drafts: Drafts | None = None,
    ) -> None:
        if not await _within_limits(message, outbox, texts, limiter):
            return
        text = (await strip_bot_mention(message.text or "", bot)).strip()
        if not has_visible_text(text):
            await outbox.send(texts.empty_message)
            return
        if len(text) > max_input_chars:
            await outbox.send(texts.too_long_for(max_input_chars))
            return
        caller = caller_of(message)  # who and where from the update, for the tools' access

        async def ask(**streaming: Any) -> TurnReply:
            return await chat_service.answer(
                chat_id=message.chat.id,
                user_id=caller.key,
                text=text,
                # a replay of this update after a crash gets the stored answer, not a new one
                request_key=f"telegram:{inbox_update_id}",
                private_chat=caller.private_chat,
                sender_is_chat=caller.is_chat,
                **streaming,
            )

        if caller.private_chat and drafts is not None and drafts.can_stream():
            async with drafts.stream(message.chat.id, inbox_update_id) as draft:
                reply = await ask(drafts=draft, stop=draft.stop)
        else:
            async with responder.typing(message.chat.id):
                reply = await ask()
        # a lookup missed for a customer without a verified phone: offer the share button
        # (every miss alike, so it tells nothing about which orders exist); private only
        offer = reply.answered and reply.offer_phone_share and caller.private_chat
        answer = customer_text(reply, texts)
        await outbox.send(
            f"{answer}\n\n{texts.phone_hint}" if offer else answer,
            turn_id=reply.turn_id,
            reply_markup=share_phone_keyboard(texts) if offer else None,
        )

    @router.stopped_message_generation()
    async def on_stop_pressed(_event: MessageGenerationStopped, outbox: Outbox) -> None:
        # the running turn was stopped when the update arrived (Drafts.signal, called by
        # the intake); by now its answer is sent, and this update needs nothing more
        await outbox.ignore("stop_pressed")

    @router.message()
    async def on_other(
        message: Message, outbox: Outbox, texts: Texts, limiter: MessageLimiter
    ) -> None:
        if not await _within_limits(message, outbox, texts, limiter):
            return
        await outbox.send(texts.text_only)

    return router
