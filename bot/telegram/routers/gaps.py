"""/gaps and /chat for the admins (ADMIN_IDS), and the presses of their buttons.

The commands' filters let only admins in, in their private chat with the bot, so anyone
else's /gaps or /chat, and an admin's in a group (where others would read the customers'
words), falls through to the unknown-command reply. A press of a gaps or conversation button is read
strictly (`GapButton.read`, `ChatPageButton.read`) and taken only from an admin; a
forged or foreign press gets the same unknown-command reply and nothing else. Every
page of a conversation is recorded before it is shown (services/gaps.py), and is its own
message, stored and sent like every answer.
"""

from __future__ import annotations

import html
import logging
from datetime import tzinfo

from aiogram import F, Router
from aiogram.enums import ChatType
from aiogram.filters import Command, CommandObject, Filter
from aiogram.methods import AnswerCallbackQuery
from aiogram.types import CallbackQuery, Message

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import FromUsers, IsCommand
from bot.telegram.formatting import Rendered
from bot.telegram.gaps_view import (
    ChatPageButton,
    DraftButton,
    GapButton,
    render_gaps,
    render_page,
    words,
)
from services.answer_drafts import AnswerDrafter
from services.gaps import ConversationReader, GapAnswers, GapsService, GapsUsageError

log = logging.getLogger(__name__)


class Private(Filter):
    """A message in a private chat: what an admin reads here (customers' words, their
    conversations) is never shown in a group, where others would read it too."""

    async def __call__(self, message: Message) -> bool:
        return message.chat.type == ChatType.PRIVATE


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
    answers: GapAnswers | None = None,
    drafts: AnswerDrafter | None = None,
) -> Router:
    """`answers`: "Answer this" under each gap (None: no knowledge base takes answers)."""
    router = Router(name="gaps")

    @router.message(IsCommand(), Private(), FromUsers(admin_ids), Command("gaps"))
    async def gaps_command(message: Message, ctx: UpdateContext, command: CommandObject) -> None:
        try:
            period = gaps.parse_period(command.args)
        except GapsUsageError:
            hint = words(ctx.language)["gaps_usage"]
            await ctx.outbox.send_rendered([Rendered(html.escape(hint, quote=False), hint)])
            return
        report = await gaps.report(period, ctx.language)
        html_text, plain, keyboard = render_gaps(
            report, ctx.language, answerable=answers is not None
        )
        await ctx.outbox.send_rendered([Rendered(html_text, plain)], reply_markup=keyboard)

    @router.message(IsCommand(), Private(), FromUsers(admin_ids), Command("chat"))
    async def chat_command(message: Message, ctx: UpdateContext, command: CommandObject) -> None:
        arg = (command.args or "").strip()
        if not arg.lstrip("-").isdigit() or len(arg) > 20:
            hint = words(ctx.language)["chat_usage"]
            await ctx.outbox.send_rendered([Rendered(html.escape(hint, quote=False), hint)])
            return
        assert message.from_user is not None  # FromUsers: a person
        admin = message.from_user.id
        await _show_page(reader, timezone, ctx, int(arg), admin=admin, via="chat", before=0)

    @router.callback_query(
        IsPressOf(GapButton.__prefix__, ChatPageButton.__prefix__, DraftButton.__prefix__)
    )
    async def press(query: CallbackQuery, ctx: UpdateContext) -> None:
        try:  # stops the button's spinner; cosmetic
            await deps.sender.call(AnswerCallbackQuery(callback_query_id=query.id))
        except Exception as exc:
            log.debug("answerCallbackQuery: %s", type(exc).__name__)
        message = query.message
        private = message is not None and message.chat.type == ChatType.PRIVATE
        if query.from_user.id not in admin_ids or not private:
            log.info("a gaps or conversation press refused: not an admin's private chat")
            await ctx.outbox.send(ctx.texts.unknown_command)
            return
        await _admin_press(query, ctx, reader, timezone, answers, drafts)

    if answers is not None:
        _add_cancel(router, answers, admin_ids)
    return router


def _add_cancel(router: Router, answers: GapAnswers, admin_ids: frozenset[int]) -> None:
    """/cancel while an admin is writing an answer to a gap: nothing is added to the
    knowledge (only where gaps can be answered at all)."""

    @router.message(IsCommand(), FromUsers(admin_ids), Command("cancel"), Answering(answers))
    async def cancel(message: Message, ctx: UpdateContext) -> None:
        assert message.from_user is not None
        await answers.cancel(message.from_user.id)
        text = words(ctx.language)["answer_cancelled"]
        await ctx.outbox.send_rendered([Rendered(html.escape(text, quote=False), text)])


async def _admin_press(
    query: CallbackQuery,
    ctx: UpdateContext,
    reader: ConversationReader,
    timezone: tzinfo,
    answers: GapAnswers | None,
    drafts: AnswerDrafter | None,
) -> None:
    """An admin's press: a page of a conversation, a gap's conversation, "answer this",
    or a draft's ✅ / ✏️ / ✖."""
    admin = query.from_user.id
    gap, page = GapButton.read(query.data), ChatPageButton.read(query.data)
    draft = DraftButton.read(query.data)
    if draft is not None and drafts is not None and answers is not None:
        await _draft_press(draft, admin, ctx, drafts, answers)
    elif page is not None:
        await _show_page(
            reader, timezone, ctx, page.chat, admin=admin, via="page", before=page.before
        )
    elif gap is not None and gap.action == "a" and answers is not None:
        question = await answers.start(admin, gap.key, ctx.language)
        w = words(ctx.language)
        text = (
            w["answer_gone"] if question is None else w["answer_prompt"].format(question=question)
        )
        await ctx.outbox.send_rendered([Rendered(html.escape(text, quote=False), text)])
    elif gap is not None and (chat_id := await reader.chat_of_turn(gap.key)) is not None:
        await _show_page(reader, timezone, ctx, chat_id, admin=admin, via="gaps", before=0)
    else:  # not our data (forged), or a question no longer stored
        log.info("a gaps or conversation press refused: not a button of ours")
        await ctx.outbox.send(ctx.texts.unknown_command)


class Answering(Filter):
    """An admin's message in their private chat with the bot while "Answer this" waits."""

    def __init__(self, answers: GapAnswers) -> None:
        self._answers = answers

    async def __call__(self, message: Message) -> bool:
        user = message.from_user
        if message.chat.type != ChatType.PRIVATE or user is None:
            return False
        return await self._answers.waiting(user.id) is not None


def build_gap_answer_router(answers: GapAnswers, admin_ids: frozenset[int]) -> Router:
    """The admin's message that answers a gap: a knowledge entry at once. Among the
    routers before the customers' chat, so the model never sees it."""
    router = Router(name="gap_answer")
    router.message.filter(FromUsers(admin_ids), Answering(answers))

    @router.message(F.text, ~IsCommand())
    async def answered(message: Message, ctx: UpdateContext) -> None:
        assert message.from_user is not None and message.text is not None
        question = await answers.answer(message.from_user.id, message.text, ctx.language)
        w = words(ctx.language)
        text = w["answer_gone"] if question is None else w["answer_added"].format(question=question)
        await ctx.outbox.send_rendered([Rendered(html.escape(text, quote=False), text)])
        log.info("an admin answered a gap; the answer is a knowledge entry now")

    return router


async def _draft_press(
    button: DraftButton,
    admin: int,
    ctx: UpdateContext,
    drafts: AnswerDrafter,
    answers: GapAnswers,
) -> None:
    """✅ adds the draft to the knowledge, ✖ discards it, ✏️ waits for the admin's answer."""
    w = words(ctx.language)
    draft = await drafts.get(button.draft)
    if draft is None:  # no draft of ours (forged): nothing to say about it
        log.info("a draft press refused: no such draft")
        await ctx.outbox.send(ctx.texts.unknown_command)
        return
    if draft.status != "pending" or draft.question is None:
        text = w["draft_decided"]
    elif button.action == "a":
        added = await drafts.add(draft.id, admin)
        text = w["draft_added"].format(question=draft.question) if added else w["draft_decided"]
    elif button.action == "s":
        text = w["draft_skipped"] if await drafts.skip(draft.id, admin) else w["draft_decided"]
    else:
        await answers.start_edit(admin, draft.id)
        text = w["draft_edit_prompt"].format(question=draft.question)
    await ctx.outbox.send_rendered([Rendered(html.escape(text, quote=False), text)])


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
        await ctx.outbox.send_rendered([Rendered(html.escape(text, quote=False), text)])
        return
    html_text, plain, keyboard = render_page(page, ctx.language, timezone)
    await ctx.outbox.send_rendered([Rendered(html_text, plain)], reply_markup=keyboard)
