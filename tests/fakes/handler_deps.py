"""`HandlerDeps` for tests that run routers without the whole wiring: real services over
the test's database, drafts off, and any collaborator replaced by keyword."""

from __future__ import annotations

import time
from typing import Any

from bot.runtime.responder import Responder
from bot.telegram.context import HandlerDeps
from bot.telegram.drafts import Drafts
from bot.telegram.sender import Sender
from services.feedback import FeedbackService
from services.limits import UserMessageLimiter
from services.phones import PhoneVerification
from services.stats import StatsService
from storage.database import Database
from storage.feedback import FeedbackRepository
from storage.shop import ShopRepository
from storage.stats import StatsRepository
from tools.shop.examples import ShopExamplesReader


class Unused:
    """Stands for a collaborator a test's routers must not touch."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        raise AssertionError(f"{self._name}.{attribute} used, but the test gave none")


def handler_deps(db: Database, sender: Sender, responder: Responder, **given: Any) -> HandlerDeps:
    values: dict[str, Any] = {
        "chat_service": Unused("chat_service"),
        "limiter": UserMessageLimiter(per_minute=100, per_day=1000),
        "command_limiter": UserMessageLimiter(per_minute=100, per_day=1000),
        "responder": responder,
        "sender": sender,
        "stats": StatsService(StatsRepository(db), clock=time.time),
        "feedback": FeedbackService(FeedbackRepository(db)),
        "phones": PhoneVerification(ShopRepository(db)),
        "shop_examples": ShopExamplesReader(ShopRepository(db)),
        "drafts": Drafts(sender, enabled=False),
        "max_input_chars": 4000,
    }
    values.update(given)
    return HandlerDeps(**values)
