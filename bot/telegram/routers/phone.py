"""Phone-verified ownership: /phone, /forget_phone and a shared contact.

The "share my phone number" button (bot/telegram/keyboards.py) is offered by /start, by /phone
and under an answer whose order lookup found nothing for a customer without a verified
phone (bot/telegram/routers/chat.py). A contact is accepted only when it is the sender's own
(`contact.user_id` equals the sender's id) and only in a private chat; anything else is
refused politely and never stored (services/phones.py). Messages sent on behalf of a
chat (an anonymous admin, a channel) have no phone of their own. Once answered, the
contact is removed from the update's inbox copy (`Outbox.drop_contact`).
"""

from __future__ import annotations

from aiogram import Router
from aiogram.filters import Command, Filter
from aiogram.types import Message

from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.filters import AddressedToBot, IsCommand, caller_of
from bot.telegram.keyboards import remove_keyboard, share_phone_keyboard
from bot.telegram.menu import MenuEntry
from bot.telegram.sender import ReplyMarkup
from bot.telegram.texts import Texts
from services.phones import ContactOutcome, PhoneVerification


class HasContact(Filter):
    async def __call__(self, message: Message) -> bool:
        return message.contact is not None


async def phone_offer(
    message: Message, phones: PhoneVerification, texts: Texts
) -> ReplyMarkup | None:
    """The share button for a person in a private chat without a verified phone."""
    caller = caller_of(message)
    if not caller.private_chat or await phones.has_verified_phone(caller.key):
        return None
    return share_phone_keyboard(texts)


# the customers' menu entries of this router (bot/telegram/menu.py), in menu order
MENU = (
    MenuEntry("phone", lambda t: t.menu_phone),
    MenuEntry("forget_phone", lambda t: t.menu_forget_phone),
)


def build_phone_commands_router(deps: HandlerDeps) -> Router:
    router = Router(name="phone_commands")
    router.message.filter(IsCommand(), AddressedToBot())

    @router.message(Command("phone"))
    async def phone(message: Message, ctx: UpdateContext) -> None:
        texts = ctx.texts
        caller = caller_of(message)
        if not caller.private_chat:
            await ctx.outbox.send(texts.phone_private_only)
            return
        verified = await deps.phones.has_verified_phone(caller.key)
        await ctx.outbox.send(
            texts.phone_offer_verified if verified else texts.phone_offer,
            reply_markup=share_phone_keyboard(texts),
        )

    @router.message(Command("forget_phone"))
    async def forget_phone(message: Message, ctx: UpdateContext) -> None:
        caller = caller_of(message)
        forgotten = not caller.is_chat and await deps.phones.forget(caller.key)
        texts = ctx.texts
        await ctx.outbox.send(texts.phone_forgotten if forgotten else texts.phone_nothing_to_forget)

    return router


def build_contact_router(deps: HandlerDeps) -> Router:
    router = Router(name="contact")
    router.message.filter(HasContact(), AddressedToBot())

    @router.message()
    async def on_contact(message: Message, ctx: UpdateContext) -> None:
        outbox, texts = ctx.outbox, ctx.texts
        contact = message.contact
        assert contact is not None  # HasContact
        caller = caller_of(message)
        if not caller.private_chat:
            await outbox.send(texts.phone_private_only)
            await outbox.drop_contact()
            return
        outcome = await deps.phones.accept_contact(
            sender_id=caller.key,
            contact_user_id=contact.user_id,
            phone_number=contact.phone_number,
        )
        if outcome is ContactOutcome.STORED:
            await outbox.send(texts.phone_saved, reply_markup=remove_keyboard())
        elif outcome is ContactOutcome.NOT_OWN:
            await outbox.send(texts.contact_not_own, reply_markup=share_phone_keyboard(texts))
        else:
            await outbox.send(texts.contact_invalid, reply_markup=remove_keyboard())
        # the reply is stored, so the update is never handled again: its copy of the
        # contact (someone else's number, too) is not kept in the inbox
        await outbox.drop_contact()

    return router
