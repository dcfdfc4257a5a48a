"""The owner's side of the knowledge feature in the bot: /knowledge for the admins
(bot/telegram/routers/knowledge_admin.py), the knowledge block of /stats (customers'
searches and misses, storage/knowledge_searches.py) and the scheduled re-sync of the web
sources (bot/runtime/knowledge_resync.py, one instance on PostgreSQL).

`admin_parts` builds them from the knowledge the feature's chat part built; the feature
(bot/telegram/features/knowledge.py) puts them in its `Feature`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from bot.runtime.config import Settings
from bot.runtime.knowledge_resync import RESYNC_WORDS, KnowledgeResync, knowledge_sync_lock_name
from bot.runtime.leadership import Leadership
from bot.telegram.context import HandlerDeps
from bot.telegram.features import FeatureRouters
from bot.telegram.routers.admin import StatsSection
from bot.telegram.routers.knowledge_admin import (
    Added,
    Progress,
    SourceLine,
    build_knowledge_admin_router,
)
from bot.telegram.stats_view.knowledge import knowledge_block
from bot.telegram.stats_view.table import TableSection
from bot.telegram.texts import Language
from services.stats import StatsReport
from storage.knowledge import KnowledgeRepository, SourceRecord
from storage.knowledge_searches import KnowledgeSearchLog
from storage.leader import LeaderLock

# sources the owner does not remove from Telegram: the imported FAQ comes back with the
# next import, and is removed by importing without it
NOT_REMOVABLE = frozenset({"faq"})

AddUrl = Callable[[str, Progress], Awaitable[Added]]
AddFile = Callable[[str, bytes, Progress], Awaitable[Added]]


def source_line(record: SourceRecord) -> SourceLine:
    return SourceLine(
        id=record.id,
        kind=record.kind,
        title=record.title,
        location=record.location,
        documents=record.documents,
        passages=record.passages,
        synced_at=record.synced_at,
        error=record.error,
        removable=record.kind not in NOT_REMOVABLE,
    )


class RepositoryOwner:
    """`KnowledgeOwner` over the knowledge tables and the knowledge's own adding."""

    def __init__(self, repo: KnowledgeRepository, add_url: AddUrl, add_file: AddFile) -> None:
        self._repo = repo
        self._add_url = add_url
        self._add_file = add_file

    async def sources(self) -> Sequence[SourceLine]:
        return [source_line(r) for r in await self._repo.sources()]

    async def add_url(self, url: str, progress: Progress) -> Added:
        return await self._add_url(url, progress)

    async def add_file(self, name: str, data: bytes, progress: Progress) -> Added:
        return await self._add_file(name, data, progress)

    async def remove(self, source_id: int) -> str | None:
        for record in await self._repo.sources():
            if record.id == source_id and record.kind not in NOT_REMOVABLE:
                if await self._repo.remove_source(record.location):
                    return record.title or record.location
        return None


def searches_section(log: KnowledgeSearchLog) -> StatsSection:
    """The /stats block: customers' knowledge searches and misses in the report's period."""

    async def section(report: StatsReport) -> TableSection:
        counts = await log.counts(report.since, report.until)

        def lines(language: Language) -> list[str]:
            return knowledge_block(counts, language)

        return lines

    return section


@dataclass(frozen=True, slots=True)
class AdminParts:
    routers: Callable[[HandlerDeps], FeatureRouters]
    stats_sections: tuple[StatsSection, ...]
    resync: Callable[[], Coroutine[Any, Any, None]] | None


def _leadership(settings: Settings) -> Leadership | None:
    if settings.database_url is None:
        return None
    bot_id = int(settings.bot_token.get_secret_value().split(":", 1)[0])
    url = settings.database_url.get_secret_value()
    return Leadership(LeaderLock(url, knowledge_sync_lock_name(bot_id)), words=RESYNC_WORDS)


def admin_parts(
    settings: Settings,
    owner: RepositoryOwner,
    log: KnowledgeSearchLog,
    *,
    sync_one: Callable[[str], Awaitable[object]] | None,
    sync_every_hours: float,
    sources: Callable[[], Awaitable[Sequence[SourceRecord]]],
    max_bytes: int,
) -> AdminParts:
    """/knowledge for ADMIN_IDS, the /stats block, the re-sync every `sync_every_hours`
    (none when 0 or without `sync_one`)."""
    admins = frozenset(settings.admin_ids)

    def routers(deps: HandlerDeps) -> FeatureRouters:
        router = build_knowledge_admin_router(deps, admins, owner, max_bytes=max_bytes)
        return FeatureRouters(first=(router,))

    resync = None
    if sync_one is not None and sync_every_hours > 0:
        resync = KnowledgeResync(
            sources,
            sync_one,
            every_s=sync_every_hours * 3600,
            leadership=_leadership(settings),
        ).run
    return AdminParts(routers=routers, stats_sections=(searches_section(log),), resync=resync)
