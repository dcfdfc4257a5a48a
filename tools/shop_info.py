"""`get_shop_info`: the shop's own answers to common questions (delivery, payment, contacts).

The answers are FAQ entries the shop imported (`import-data`, key `faq`) or the demo
ones. A topic or question is matched by whole words against each entry's topic and
aliases (`tools.shop.faq`): the whole question first, then every run of its words, so
"доставка", "Сколько стоит доставка?" and "delivery" all find the delivery entry. No
fuzzy guessing: an answer the shop did not write is never returned, and a miss is a
structured "not found" that carries what the model needs to answer honestly — the
shop's contacts (its FAQ entry for contacts, if any) and a short list of known topics
to retry with. The FAQ is public, so the tool answers anyone, in any chat.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from storage.shop_records import FaqRecord
from tools.base import LookupResult, Tool, ToolContext
from tools.shop.faq import CONTACTS_KEYS, question_keys

GET_SHOP_INFO = "get_shop_info"
# At most this many entries per answer (a question may touch two topics: "доставка и
# оплата"), and this many topics listed on a miss: the result stays small.
MAX_ENTRIES = 3
MAX_KNOWN_TOPICS = 20

DESCRIPTION = (
    "The shop's own answers on delivery, payment, contacts and other general topics, "
    "matched by the topic's words. On a miss, known_topics lists what it can answer."
)
FOUND_MESSAGE = "The shop's answer; use only what it says."
NOT_FOUND_MESSAGE = (
    "The shop has no information on this topic. Tell the customer you do not know; do "
    "not guess or use general knowledge."
)
CONTACTS_MESSAGE = " Give the customer the shop's contacts (field contacts)."


class GetShopInfoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=2, max_length=100)
    ] = Field(
        description=(
            "A short topic in the customer's language or English, e.g. доставка, "
            "оплата, контакты, delivery."
        ),
    )


class ShopInfoEntry(BaseModel):
    topic: str
    answer: str


class ShopInfoResult(LookupResult):
    topic: str
    found: bool
    entries: list[ShopInfoEntry] = Field(default_factory=list)
    contacts: str | None = None
    known_topics: list[str] | None = None
    message: str


async def _matches(topic: str, context: ToolContext) -> list[FaqRecord]:
    """Entries matched by `topic`: the exact entry alone, else by the words, in order."""
    keys = question_keys(topic)
    found = await context.shop.find_faq_entries(keys)
    if keys and keys[0] in found:
        return [found[keys[0]]]
    entries: dict[str, FaqRecord] = {}
    for key in keys:
        record = found.get(key)
        if record is not None and record.key not in entries:
            entries[record.key] = record
    return list(entries.values())[:MAX_ENTRIES]


async def get_shop_info(arguments: GetShopInfoArguments, context: ToolContext) -> ShopInfoResult:
    entries = await _matches(arguments.topic, context)
    if entries:
        return ShopInfoResult(
            topic=arguments.topic,
            found=True,
            entries=[ShopInfoEntry(topic=e.topic, answer=e.answer) for e in entries],
            message=FOUND_MESSAGE,
        )
    by_key = await context.shop.find_faq_entries(CONTACTS_KEYS)
    contacts = next((by_key[key].answer for key in CONTACTS_KEYS if key in by_key), None)
    topics = await context.shop.faq_topics(MAX_KNOWN_TOPICS)
    return ShopInfoResult(
        topic=arguments.topic,
        found=False,
        contacts=contacts,
        known_topics=topics,
        message=NOT_FOUND_MESSAGE + (CONTACTS_MESSAGE if contacts else ""),
    )


def shop_info_tool() -> Tool[GetShopInfoArguments, ShopInfoResult]:
    return Tool(
        name=GET_SHOP_INFO,
        description=DESCRIPTION,
        arguments_model=GetShopInfoArguments,
        result_model=ShopInfoResult,
        handler=get_shop_info,
        timeout_s=5.0,
        read_only=True,
    )
