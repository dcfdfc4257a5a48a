"""What the bot could not answer, as one feature: always on (it adds nothing to a turn).

It brings /gaps and /chat for the admins with their buttons (bot/telegram/routers/gaps.py),
a /stats line that points to /gaps, and the weekly digest of gaps to the admins
(GAPS_DIGEST_ENABLED, off by default; on GAPS_DIGEST_WEEKDAY after GAPS_DIGEST_HOUR in
STATS_TIMEZONE, claimed per week in the database so several instances send it once). Its
words are `GAPS_WORDS` (bot/telegram/gaps_view.py), its settings `GapsSettings`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import Field

from bot.runtime.config import FeatureSettings, Settings, SettingsError, load_feature_settings
from bot.runtime.exit_codes import CannotStart
from bot.telegram.context import HandlerDeps
from bot.telegram.features import Feature, FeatureRouters
from bot.telegram.features.catalog import Needs, TelegramFeatureSpec, TelegramNeeds, on
from bot.telegram.features.knowledge import KnowledgeSettings, build_knowledge
from bot.telegram.gaps_view import GAPS_WORDS, render_draft, render_gaps, words
from bot.telegram.menu import feature_entry
from bot.telegram.routers.gaps import build_gap_answer_router, build_gaps_router
from bot.telegram.sender import Sender
from bot.telegram.stats_view.table import TableSection
from bot.telegram.texts import Language
from services.answer_drafts import AnswerDrafter
from services.gaps import ConversationReader, GapAnswers, GapsService, QuestionEmbedder
from services.stats import StatsReport
from storage.answer_drafts import AnswerDraftRepository
from storage.database import Database
from storage.outcomes import OutcomeRepository, claim_digest
from tools.knowledge.base import KnowledgeBase

log = logging.getLogger(__name__)

DIGEST_CHECK_S = 600.0


class GapsSettings(FeatureSettings):
    """GAPS_DIGEST_ENABLED: the weekly digest to the admins (off by default);
    GAPS_DIGEST_WEEKDAY (1 = Monday … 7 = Sunday) and GAPS_DIGEST_HOUR (0-23, in
    STATS_TIMEZONE): when it is sent."""

    gaps_digest_enabled: bool = False
    gaps_digest_weekday: int = Field(default=1, ge=1, le=7)
    gaps_digest_hour: int = Field(default=9, ge=0, le=23)
    # how often closed handoffs are looked for, to draft from the operators' answers
    answer_drafts_every_s: float = Field(default=30.0, ge=0.2, le=3600.0)


def week_due(now: float, tz: tzinfo, conf: GapsSettings) -> str | None:
    """The ISO week whose digest is due at `now`, or None before its weekday and hour."""
    local = datetime.fromtimestamp(now, tz)
    year, week, weekday = local.isocalendar()
    if (weekday, local.hour) < (conf.gaps_digest_weekday, conf.gaps_digest_hour):
        return None
    return f"{year}-W{week:02d}"


class Digest:
    """Sends the last 7 days' gaps to each admin once a week (see the module notes)."""

    def __init__(
        self,
        gaps: GapsService,
        db: Database,
        sender: Sender,
        *,
        admins: tuple[int, ...],
        language: Language,
        tz: tzinfo,
        conf: GapsSettings,
    ) -> None:
        self._gaps, self._db, self._sender = gaps, db, sender
        self._admins, self._language, self._tz, self._conf = admins, language, tz, conf

    async def send_if_due(self, now: float) -> bool:
        week = week_due(now, self._tz, self._conf)
        if week is None or not self._admins or not await claim_digest(self._db, week, now):
            return False
        report = await self._gaps.report("7d", self._language)
        html_text, _plain, keyboard = render_gaps(report, self._language, answerable=False)
        title = words(self._language)["gaps_digest"]
        for admin in self._admins:
            result = await self._sender.send_text(
                admin, f"<b>{title}</b>\n\n{html_text}", parse_mode="HTML", reply_markup=keyboard
            )
            if not result.delivered:
                log.warning("gaps digest to an admin: %s", result.reason)
        log.info("gaps digest of %s sent to %d admins", week, len(self._admins))
        return True

    async def run(self) -> None:
        while True:
            try:
                await self.send_if_due(time.time())
            except Exception:
                log.exception("gaps digest failed; trying again later")
            await asyncio.sleep(DIGEST_CHECK_S)


class LazyKnowledge:
    """The shop's knowledge an admin's answer is added to, and the embedder /gaps groups
    by, built on first use: the engine (numpy, the bundled model) is imported only then,
    not by every start."""

    def __init__(self, db: Database, conf: KnowledgeSettings, settings: Settings) -> None:
        self._db, self._conf, self._settings = db, conf, settings
        self._knowledge: KnowledgeBase | None = None

    def _built(self) -> KnowledgeBase:
        if self._knowledge is None:
            # the same store and embedder (KNOWLEDGE_EMBEDDER) as the knowledge search
            self._knowledge = build_knowledge(self._db, self._conf, self._settings)
        return self._knowledge

    async def add_entry(self, title: str, text: str, *, url: str | None = None) -> int:
        return await self._built().add_entry(title, text, url=url)

    def embedder(self) -> QuestionEmbedder | None:
        return self._built().embedder


class DraftProposer:
    """Drafts from the handoffs closed lately, each put before every admin with
    ✅ Add / ✏️ Edit / ✖ Skip (services/answer_drafts.py decides once)."""

    def __init__(
        self, drafts: AnswerDrafter, sender: Sender, admins: tuple[int, ...], language: Language
    ) -> None:
        self._drafts, self._sender, self._admins, self._language = drafts, sender, admins, language

    async def propose(self) -> int:
        drafted = await self._drafts.draft_closed()
        for draft in drafted:
            text, keyboard = render_draft(draft.id, draft.question, draft.answer, self._language)
            for admin in self._admins:
                result = await self._sender.send_text(
                    admin, text, parse_mode="HTML", reply_markup=keyboard
                )
                if not result.delivered:
                    log.warning("an answer draft to an admin: %s", result.reason)
        return len(drafted)

    async def run(self, every_s: float) -> None:
        while True:
            try:
                await self.propose()
            except Exception:
                log.exception("drafting from closed handoffs failed; trying again later")
            await asyncio.sleep(every_s)


@dataclass(frozen=True, slots=True)
class GapsParts:
    """The learning loop's pieces: `answers` only with the knowledge search on (an
    admin's answer is added to it), `drafts` only then and with operators, whose
    answers are drafted from."""

    gaps: GapsService
    reader: ConversationReader
    answers: GapAnswers | None
    drafts: AnswerDrafter | None
    admins: frozenset[int]
    timezone: tzinfo
    language: Language


def gaps_parts(needs: Needs, telegram: TelegramNeeds) -> GapsParts:
    settings = needs.settings
    repo = OutcomeRepository(needs.db)
    try:
        knowledge_conf = load_feature_settings(KnowledgeSettings)
    except SettingsError as exc:  # the knowledge feature, built first, says it at start
        raise CannotStart(str(exc)) from None
    knowledge = LazyKnowledge(needs.db, knowledge_conf, settings)
    # with the knowledge search off, gaps are grouped by words and none can be answered
    learning = knowledge_conf.knowledge_enabled
    gaps = GapsService(repo, embedder=knowledge.embedder if learning else lambda: None)
    language = telegram.texts.default_language
    drafts = None
    if learning and settings.operator_chat_id is not None:  # operators answer customers
        drafts = AnswerDrafter(
            AnswerDraftRepository(needs.db), telegram.model, knowledge, language=language
        )
    answers = (
        GapAnswers(repo, knowledge, edit_draft=drafts.edited if drafts else None)
        if learning
        else None
    )
    return GapsParts(
        gaps,
        ConversationReader(repo),
        answers,
        drafts,
        admins=frozenset(settings.admin_ids),
        timezone=ZoneInfo(settings.stats_timezone),
        language=language,
    )


def gaps_routers(parts: GapsParts) -> Callable[[HandlerDeps], FeatureRouters]:
    """/gaps and /chat with their buttons; an admin's answer to a gap only where gaps
    can be answered (`parts.answers`)."""

    def routers(deps: HandlerDeps) -> FeatureRouters:
        router = build_gaps_router(
            deps,
            gaps=parts.gaps,
            reader=parts.reader,
            admin_ids=parts.admins,
            timezone=parts.timezone,
            answers=parts.answers,
            drafts=parts.drafts,
        )
        if parts.answers is None:
            return FeatureRouters(commands=(router,))
        return FeatureRouters(
            commands=(router,), messages=(build_gap_answer_router(parts.answers, parts.admins),)
        )

    return routers


async def gaps_stats_section(report: StatsReport) -> TableSection:
    """The /stats line that points to /gaps, only when something went unanswered."""
    missed = report.outcomes.by_outcome.get("dont_know", 0)

    def lines(language: Language) -> list[str]:
        return [words(language)["gaps_stats"].format(n=missed)] if missed else []

    return lines


def gaps_work(
    parts: GapsParts, needs: Needs, telegram: TelegramNeeds, conf: GapsSettings
) -> list[Callable[[], Coroutine[Any, Any, None]]]:
    """Its background work: the weekly digest (GAPS_DIGEST_ENABLED) and the drafts from
    closed handoffs put before the admins (when drafting is on and someone is an admin)."""
    admins = tuple(sorted(parts.admins))
    work: list[Callable[[], Coroutine[Any, Any, None]]] = []
    if conf.gaps_digest_enabled:
        digest = Digest(
            parts.gaps,
            needs.db,
            telegram.sender,
            admins=admins,
            language=parts.language,
            tz=parts.timezone,
            conf=conf,
        )
        work.append(digest.run)
    if parts.drafts is not None and admins:
        proposer = DraftProposer(parts.drafts, telegram.sender, admins, parts.language)
        every_s = conf.answer_drafts_every_s
        work.append(lambda: proposer.run(every_s))
    return work


def gaps_on_telegram(
    needs: Needs, telegram: TelegramNeeds, _own: None, conf: GapsSettings
) -> Feature:
    parts = gaps_parts(needs, telegram)
    work = gaps_work(parts, needs, telegram, conf)

    async def background() -> None:
        await asyncio.gather(*(start() for start in work))

    return Feature(
        name="gaps",
        routers=gaps_routers(parts),
        admin_menu=(
            feature_entry("gaps", "menu_gaps", GAPS_WORDS),
            feature_entry("chat", "menu_chat", GAPS_WORDS),
        ),
        stats_sections=(gaps_stats_section,),
        background=background if work else None,
    )


# always on: nothing in a turn; the admins' commands only where ADMIN_IDS names someone
GAPS: TelegramFeatureSpec[None, GapsSettings] = TelegramFeatureSpec(
    name="gaps",
    chat=lambda _needs, _conf: on(True),
    telegram=gaps_on_telegram,
    settings=GapsSettings,
    words=GAPS_WORDS,
)
