"""A worked example of a feature, whole in one module: the shop's opening hours.

On with SHOP_HOURS (its settings group); it brings one tool (`get_shop_hours`), one
prompt fragment (when to call it), one text in each language (the /hours reply, which a
shop's TEXTS_FILE may reword like any other text) and its
Telegram side (the /hours command). Adding it to the bot is this module and one line in
bot/telegram/features/registry.py (`FEATURES`); the tests pass the list with it instead.
Not a product feature: the shop's FAQ (get_shop_info) already answers opening hours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aiogram import Router
from aiogram.filters import Command
from aiogram.types import Message
from pydantic import BaseModel, ConfigDict

from bot.runtime.config import FeatureSettings
from bot.telegram.context import HandlerDeps, UpdateContext
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import (
    ChatPart,
    Needs,
    TelegramFeatureSpec,
    TelegramNeeds,
    word_table,
)
from bot.telegram.texts import Language
from services.prompts.composed import PromptFragment, Slot
from tools.base import Tool, ToolContext


class ShopHoursSettings(FeatureSettings):
    shop_hours: str | None = None  # SHOP_HOURS, e.g. "Mon-Fri 9:00-18:00 MSK"


@dataclass(frozen=True, slots=True)
class HoursWords:
    hours_reply: str  # {hours} required (SHOP_HOURS), filled in per message


# the built-in words; a shop's TEXTS_FILE rewords them by key ([ru] hours_reply = "…")
WORDS: Mapping[Language, HoursWords] = {
    "ru": HoursWords(hours_reply="Часы работы магазина: {hours}"),
    "en": HoursWords(hours_reply="The shop's opening hours: {hours}"),
}

HOURS_RULE = PromptFragment(
    "shop_hours", "1", Slot.TOOLS, "- For the shop's opening hours, call get_shop_hours."
)


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Hours(BaseModel):
    hours: str


def hours_tool(hours: str) -> Tool[NoArguments, Hours]:
    async def get_shop_hours(_arguments: NoArguments, _context: ToolContext) -> Hours:
        return Hours(hours=hours)

    return Tool(
        name="get_shop_hours",
        description="The shop's opening hours, as the shop wrote them.",
        arguments_model=NoArguments,
        result_model=Hours,
        handler=get_shop_hours,
    )


def hours_in_turns(_needs: Needs, conf: ShopHoursSettings) -> ChatPart[str] | None:
    if conf.shop_hours is None:
        return None
    return ChatPart(conf.shop_hours, tools=(hours_tool(conf.shop_hours),), prompt=(HOURS_RULE,))


def hours_on_telegram(
    _needs: Needs, _telegram: TelegramNeeds, hours: str, _conf: ShopHoursSettings
) -> Feature:
    def routers(_deps: HandlerDeps) -> FeatureRouters:
        router = Router(name="shop_hours")

        @router.message(Command("hours"))
        async def on_hours(_message: Message, ctx: UpdateContext) -> None:
            await ctx.outbox.send(ctx.texts.of(WORDS).hours_reply.format(hours=hours))

        return FeatureRouters(commands=(router,))

    return Feature(name="shop_hours", routers=routers)


SHOP_HOURS: TelegramFeatureSpec[str, ShopHoursSettings] = TelegramFeatureSpec(
    name="shop_hours",
    chat=hours_in_turns,
    telegram=hours_on_telegram,
    settings=ShopHoursSettings,
    words=word_table(WORDS),
    turned_on={"shop_hours": "Mon-Fri 9:00-18:00"},
)
