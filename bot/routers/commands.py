"""/start, /help, /new, and the reply to commands the bot does not know."""

from __future__ import annotations

from aiogram import Router
from aiogram.filters import Command, CommandStart
from aiogram.types import Message

from bot.filters import AddressedToBot, IsCommand, MayStartOver
from bot.responder import Outbox
from bot.routers.phone import phone_offer
from bot.texts import Texts
from services.chat import ChatService
from services.phones import PhoneVerification


def build_commands_router() -> Router:
    router = Router(name="commands")
    # IsCommand first: plain questions skip the (costlier) command parsing entirely
    router.message.filter(IsCommand(), AddressedToBot())

    @router.message(CommandStart())
    async def start(
        message: Message, outbox: Outbox, texts: Texts, phones: PhoneVerification
    ) -> None:
        # the "share my phone number" button comes with the welcome (bot/routers/phone.py)
        await outbox.send(texts.start, reply_markup=await phone_offer(message, phones, texts))

    @router.message(Command("help"))
    async def help_(message: Message, outbox: Outbox, texts: Texts) -> None:
        await outbox.send(texts.help)

    @router.message(Command("new"), MayStartOver())
    async def new(
        message: Message, outbox: Outbox, texts: Texts, chat_service: ChatService
    ) -> None:
        await chat_service.reset(message.chat.id)
        await outbox.send(texts.new_session)

    @router.message(Command("new"))  # a group member who is not an admin: history stays
    async def new_refused(message: Message, outbox: Outbox, texts: Texts) -> None:
        await outbox.send(texts.new_admins_only)

    return router


def build_unknown_command_router() -> Router:
    """Included after every command router (admin too): the fall-through for "/anything"."""
    router = Router(name="unknown_command")
    router.message.filter(IsCommand(captions=False), AddressedToBot())

    @router.message()
    async def unknown(message: Message, outbox: Outbox, texts: Texts) -> None:
        await outbox.send(texts.unknown_command)

    return router
