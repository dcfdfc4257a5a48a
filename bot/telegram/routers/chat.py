"""Customer messages: text goes to the chat service, anything else gets a polite note.

Cheap checks come first and never reach the model: per-user limits, empty text (made
only of characters that render as nothing: spaces, fillers, zero-width marks — see
services/text_visibility.py), text over MAX_INPUT_CHARS, non-text content. The typing
indicator covers the whole turn; in private chats, with STREAM_ANSWERS on, a draft
does instead (`deps.drafts`, bot/telegram/features/streaming.py): "Thinking…", then the answer
as it is written, with a stop button. `answer_words` (the length check, `ask_model`,
`send_answer`) is the one way a customer's words become a turn and its answer; voice
notes (bot/telegram/routers/voice.py) take it too, with what was heard. Collaborators come from
`HandlerDeps` (the builder's argument), the update's own things from `ctx`
(bot/telegram/context.py).
"""

from __future__ import annotations

import asyncio

from aiogram import Bot, Router
from aiogram.types import Message

from bot.telegram.channel import reply_target_of
from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import AddressedToBot, HasText, caller_of, strip_bot_mention
from bot.telegram.formatting import Rendered, messages_under_heading
from bot.telegram.limits import within_limits
from bot.telegram.texts import Texts
from bot.telegram.turn_view import ChatSide, turn_view
from services.answer_stream import DraftSink
from services.chat import ChatService
from services.loop_types import TurnReply
from services.text_visibility import has_visible_text


def refusal_of(text: str, texts: Texts, max_input_chars: int) -> str | None:
    """The polite note for words that never enter a conversation — made only of invisible
    characters, or over MAX_INPUT_CHARS — or None. The one input check of typed words,
    here and during a handoff (bot/telegram/routers/handoff.py: what the model reads after it)."""
    if not has_visible_text(text):
        return texts.empty_message
    if len(text) > max_input_chars:
        return texts.too_long_for(max_input_chars)
    return None


def request_key(inbox_update_id: int) -> str:
    """What a turn answers: the update (a replay of it after a crash gets the stored turn)."""
    return f"telegram:{inbox_update_id}"


async def ask_model(
    message: Message,
    text: str,
    chat_service: ChatService,
    inbox_update_id: int,
    *,
    transcribed: bool = False,
    drafts: DraftSink | None = None,
    stop: asyncio.Event | None = None,
    language: str | None = None,
) -> TurnReply:
    """One turn on the customer's words (`transcribed`: heard in a voice note; `drafts`
    and `stop`: the answer streamed into a draft with a stop button; `language`: the
    chat's, as the bot's own texts chose it)."""
    return await chat_service.answer(
        caller_of(message),  # who and where from the update, for the tools' access
        text,
        # a replay of this update after a crash gets the stored answer, not a new one
        request_key=request_key(inbox_update_id),
        transcribed=transcribed,
        drafts=drafts,
        stop=stop,
        language=language,
    )


async def send_answer(
    message: Message,
    reply: TurnReply,
    ctx: UpdateContext,
    deps: HandlerDeps,
    *,
    heading: Rendered | None = None,
) -> None:
    """The turn's answer in the customer's words; `heading` goes above it (what was heard);
    👍/👎 under an AI answer (FEEDBACK_ENABLED), stored with it. The features add their
    parts (`deps.after_turn`: e.g. the notice and the operators' brief of a handoff the
    model opened, from the turn's offer, which a replay has too)."""
    additions = [a for a in [await after(message, reply, ctx) for after in deps.after_turn] if a]
    notices = [a.notice for a in additions if a.notice is not None]
    side = ChatSide(
        private_chat=caller_of(message).private_chat,
        feedback_buttons=deps.feedback_buttons,
        person_button=deps.person_button,
        language=ctx.language,
        offer_rows=deps.offer_rows,
    )
    view = turn_view(
        reply, ctx.texts, side, handoff_notice="\n\n".join(notices) if notices else None
    )
    body, markup = view.text, view.markup
    also = tuple(part for a in additions for part in a.also)
    if heading is None:
        await ctx.outbox.send(body, turn_id=reply.turn_id, reply_markup=markup, also=also)
    else:
        parts = messages_under_heading(heading, body)
        await ctx.outbox.send_rendered(parts, turn_id=reply.turn_id, reply_markup=markup, also=also)
    for addition in additions:
        await addition.sent()


async def answer_words(
    message: Message,
    text: str,
    ctx: UpdateContext,
    deps: HandlerDeps,
    *,
    heard: Rendered | None = None,
) -> None:
    """A customer's words (typed, or `heard` in a voice note: the line quoting them goes
    above the answer) within MAX_INPUT_CHARS become a turn, then its answer. A typed
    question in a private chat streams into a draft when drafts may stream now (never in
    an owner's chat: `ReplyTarget.streams_drafts`); anything else shows "typing…" while
    the turn runs."""
    if len(text) > deps.max_input_chars:
        await ctx.outbox.send(ctx.texts.too_long_for(deps.max_input_chars))
        return
    target = reply_target_of(message)
    transcribed = heard is not None
    streams = not transcribed and caller_of(message).private_chat and target.streams_drafts
    if streams and deps.drafts.can_stream():
        async with deps.drafts.stream(target.chat_id, ctx.update_id) as draft:
            reply = await ask_model(
                message,
                text,
                deps.chat_service,
                ctx.update_id,
                drafts=draft,
                stop=draft.stop,
                language=ctx.language,
            )
    else:
        async with deps.responder.typing(target):
            reply = await ask_model(
                message,
                text,
                deps.chat_service,
                ctx.update_id,
                transcribed=transcribed,
                language=ctx.language,
            )
    await send_answer(message, reply, ctx, deps, heading=heard)


def build_chat_router(deps: HandlerDeps) -> Router:
    """Typed questions; anything else gets a polite note."""
    router = Router(name="chat")
    router.message.filter(AddressedToBot())

    @router.message(HasText())
    async def on_text(message: Message, ctx: UpdateContext, bot: Bot) -> None:
        if not await within_limits(message, ctx, deps.limiter):
            return
        text = (await strip_bot_mention(message.text or "", bot)).strip()
        refusal = refusal_of(text, ctx.texts, deps.max_input_chars)
        if refusal is not None:
            await ctx.outbox.send(refusal)
            return
        await answer_words(message, text, ctx, deps)

    @router.message()
    async def on_other(message: Message, ctx: UpdateContext) -> None:
        if not await within_limits(message, ctx, deps.limiter):
            return
        await ctx.outbox.send(ctx.texts.text_only)

    return router
