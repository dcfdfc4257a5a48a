"""/start, /help, /new, and the reply to commands the bot does not know."""

from __future__ import annotations

from aiogram import Router
from aiogram.filters import Command, CommandStart
from aiogram.types import Message

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import AddressedToBot, IsCommand, MayStartOver
from bot.telegram.menu import MenuEntry
from bot.telegram.routers.phone import phone_offer
from bot.telegram.welcome import welcome_examples

# the customers' menu entries of this router (bot/telegram/menu.py), in menu order
MENU = (
    MenuEntry("start", lambda t: t.menu_start),
    MenuEntry("help", lambda t: t.menu_help),
    MenuEntry("new", lambda t: t.menu_new),
)


def build_commands_router(deps: HandlerDeps) -> Router:
    router = Router(name="commands")
    # IsCommand first: plain questions skip the (costlier) command parsing entirely
    router.message.filter(IsCommand(), AddressedToBot())

    @router.message(CommandStart())
    async def start(message: Message, ctx: UpdateContext) -> None:
        # the "share my phone number" button comes with the welcome (bot/telegram/routers/phone.py)
        offer = await phone_offer(message, deps.phones, ctx.texts)
        examples = welcome_examples(ctx.language, await deps.shop_examples.read())
        await ctx.outbox.send(ctx.texts.start_with(examples), reply_markup=offer)

    @router.message(Command("help"))
    async def help_(message: Message, ctx: UpdateContext) -> None:
        await ctx.outbox.send(ctx.texts.help)

    @router.message(Command("new"), MayStartOver())
    async def new(message: Message, ctx: UpdateContext) -> None:
        await deps.chat_service.reset(message.chat.id)
        await ctx.outbox.send(ctx.texts.new_session)

    @router.message(Command("new"))  # a group member who is not an admin: history stays
    async def new_refused(message: Message, ctx: UpdateContext) -> None:
        await ctx.outbox.send(ctx.texts.new_admins_only)

    return router


def build_unknown_command_router() -> Router:
    """Included after every command router (admin too): the fall-through for "/anything"."""
    router = Router(name="unknown_command")
    router.message.filter(IsCommand(captions=False), AddressedToBot())

    @router.message()
    async def unknown(message: Message, ctx: UpdateContext) -> None:
        await ctx.outbox.send(ctx.texts.unknown_command)

    return router
