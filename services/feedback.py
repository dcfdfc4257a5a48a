"""👍/👎 on an AI answer: who may rate which answer, recorded once per answer.

The bot hands over the ids from the callback update (the answer's turn id from the
button, the chat the press came from, the person who pressed); nothing here knows
Telegram. An answer may be rated only from the chat it was given in — a button whose
data names another chat's answer (forged: Telegram sends back whatever data a client
puts in) is refused — and only by the person who asked the question. In a private chat
that is the chat's owner; in a group, the other members see the buttons but their
presses are refused, so a group's answers carry their asker's opinion, not a vote.

A press replaces the answer's earlier rating (👍 then 👎 counts once, as 👎). Logs name
the turn and the outcome, never who pressed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import IntEnum, StrEnum

from storage.database import StorageRetry
from storage.feedback import FeedbackRepository

log = logging.getLogger(__name__)


class Rating(IntEnum):
    UP = 1  # 👍
    DOWN = -1  # 👎


class FeedbackOutcome(StrEnum):
    RECORDED = "recorded"
    NO_SUCH_ANSWER = "no_such_answer"  # unknown turn, a failed one, or another chat's
    NOT_ASKER = "not_asker"  # someone other than the asker pressed (in a group)


class FeedbackService:
    """Records ratings; every write retried on storage faults like the other writes."""

    def __init__(
        self,
        repository: FeedbackRepository,
        *,
        storage_retry: StorageRetry | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._repo = repository
        self._retry = storage_retry or StorageRetry()
        self._clock = clock

    async def rate(
        self, *, turn_id: str, chat_id: int, user_id: int, rating: Rating
    ) -> FeedbackOutcome:
        """Record `rating` of answer `turn_id`, pressed by `user_id` in `chat_id`."""
        answer = await self._repo.answer(turn_id)
        if answer is None or answer.chat_id != chat_id:
            log.info("feedback refused for turn %s: no such answer in this chat", turn_id)
            return FeedbackOutcome.NO_SUCH_ANSWER
        if answer.user_id != user_id:
            log.info("feedback refused for turn %s: not the asker", turn_id)
            return FeedbackOutcome.NOT_ASKER
        await self._retry.run(
            f"recording feedback on turn {turn_id}",
            lambda: self._repo.record(
                answer, user_id=user_id, rating=int(rating), rated_at=self._clock()
            ),
        )
        log.info("feedback on turn %s: %s", turn_id, rating.name.lower())
        return FeedbackOutcome.RECORDED
