"""/gaps and /chat for the admins (ADMIN_IDS), and the presses of their buttons.

The commands' filter lets only admins in, so anyone else's /gaps or /chat falls through
to the unknown-command reply. A press of a gaps or conversation button is read
strictly (`GapButton.read`, `ChatPageButton.read`) and taken only from an admin; a
forged or foreign press gets the same unknown-command reply and nothing else. Every
page of a conversation is recorded before it is shown (services/gaps.py), and is its own
message, stored and sent like every answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import tzinfo

from aiogram import Router
from aiogram.filters import Command, CommandObject, Filter
from aiogram.methods import AnswerCallbackQuery
from aiogram.types import CallbackQuery, Message

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import FromUsers, IsCommand
from bot.telegram.formatting import Rendered
from bot.telegram.gaps_view import ChatPageButton, GapButton, render_gaps, render_page, words
from services.gaps import ConversationReader, GapsService, GapsUsageError

log = logging.getLogger(__name__)

# what "Answer this" does with the admin's press: None while no knowledge base takes answers
AnswerStarter = Callable[[CallbackQuery, UpdateContext, str], Awaitable[None]]


class IsPressOf(Filter):
    """A press whose data starts with one of `prefixes` (validated by the handler, so a
    forged one still gets an answer: the unknown-command reply)."""

    def __init__(self, *prefixes: str) -> None:
        self._prefixes = tuple(f"{p}:" for p in prefixes)

    async def __call__(self, query: CallbackQuery) -> bool:
        return (query.data or "").startswith(self._prefixes)


def build_gaps_router(
    deps: HandlerDeps,
    *,
    gaps: GapsService,
    reader: ConversationReader,
    admin_ids: frozenset[int],
    timezone: tzinfo,
    answer: AnswerStarter | None = None,
) -> Router:
    router = Router(name="gaps")

    async def show_page(
        ctx: UpdateContext, chat_id: int, admin: int, via: str, before: int
    ) -> None:
        page = await reader.read(chat_id, admin_id=admin, via=via, before=before or None)
        if page is None:
            text = words(ctx.language)["chat_unknown"].format(chat=chat_id)
            await ctx.outbox.send_rendered([Rendered(text, text)])
            return
        html_text, plain, keyboard = render_page(page, ctx.language, timezone)
        await ctx.outbox.send_rendered([Rendered(html_text, plain)], reply_markup=keyboard)

    @router.message(IsCommand(), FromUsers(admin_ids), Command("gaps"))
    async def gaps_command(message: Message, ctx: UpdateContext, command: CommandObject) -> None:
        try:
            period = gaps.parse_period(command.args)
        except GapsUsageError:
            hint = words(ctx.language)["gaps_usage"]
            await ctx.outbox.send_rendered([Rendered(hint, hint)])
            return
        report = await gaps.report(period, ctx.language)
        html_text, plain, keyboard = render_gaps(
            report, ctx.language, answerable=answer is not None
        )
        await ctx.outbox.send_rendered([Rendered(html_text, plain)], reply_markup=keyboard)

    @router.message(IsCommand(), FromUsers(admin_ids), Command("chat"))
    async def chat_command(message: Message, ctx: UpdateContext, command: CommandObject) -> None:
        arg = (command.args or "").strip()
        if not arg.lstrip("-").isdigit() or len(arg) > 20:
            hint = words(ctx.language)["chat_usage"]
            await ctx.outbox.send_rendered([Rendered(hint, hint)])
            return
        assert message.from_user is not None  # FromUsers: a person
        admin = message.from_user.id
        await _show_page(reader, timezone, ctx, int(arg), admin=admin, via="chat", before=0)

    @router.callback_query(IsPressOf(GapButton.__prefix__, ChatPageButton.__prefix__))
    async def press(query: CallbackQuery, ctx: UpdateContext) -> None:
        try:  # stops the button's spinner; cosmetic
            await deps.sender.call(AnswerCallbackQuery(callback_query_id=query.id))
        except Exception as exc:
            log.debug("answerCallbackQuery: %s", type(exc).__name__)
        if query.from_user.id not in admin_ids:
            log.info("a gaps or conversation press refused: not an admin")
            await ctx.outbox.send(ctx.texts.unknown_command)
            return
        await _admin_press(query, ctx, reader, timezone, answer)

    return router


async def _admin_press(
    query: CallbackQuery,
    ctx: UpdateContext,
    reader: ConversationReader,
    timezone: tzinfo,
    answer: AnswerStarter | None,
) -> None:
    """An admin's press: a page of a conversation, a gap's conversation, or "answer this"."""
    admin = query.from_user.id
    gap, page = GapButton.read(query.data), ChatPageButton.read(query.data)
    if page is not None:
        await _show_page(
            reader, timezone, ctx, page.chat, admin=admin, via="page", before=page.before
        )
    elif gap is not None and gap.action == "a" and answer is not None:
        await answer(query, ctx, gap.key)
    elif gap is not None and (chat_id := await reader.chat_of_turn(gap.key)) is not None:
        await _show_page(reader, timezone, ctx, chat_id, admin=admin, via="gaps", before=0)
    else:  # not our data (forged), or a question no longer stored
        log.info("a gaps or conversation press refused: not a button of ours")
        await ctx.outbox.send(ctx.texts.unknown_command)


async def _show_page(
    reader: ConversationReader,
    timezone: tzinfo,
    ctx: UpdateContext,
    chat_id: int,
    *,
    admin: int,
    via: str,
    before: int,
) -> None:
    """A page of a conversation (read and recorded by the reader), as its own message."""
    page = await reader.read(chat_id, admin_id=admin, via=via, before=before or None)
    if page is None:
        text = words(ctx.language)["chat_unknown"].format(chat=chat_id)
        await ctx.outbox.send_rendered([Rendered(text, text)])
        return
    html_text, plain, keyboard = render_page(page, ctx.language, timezone)
    await ctx.outbox.send_rendered([Rendered(html_text, plain)], reply_markup=keyboard)
