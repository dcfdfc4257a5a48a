"""What a handler works with: the bot's collaborators, and the update it handles.

Handlers get their collaborators from the router builder that defines them
(`build_chat_router(deps)`: the handler's closure), so mypy checks that every one a
handler uses exists and has the type it expects; nothing is matched by parameter name
except `ctx`, the update's own context, and what aiogram or a filter of that handler puts
there (`bot`, `command`, ...). `tests/unit/bot/test_handler_dependencies.py` keeps it so.

`HandlerDeps` is built once by the wiring (bot/telegram/wiring/telegram.py) and never changes;
a feature (bot/telegram/features/) gives its own routers what only they need (the handoff desk,
the transcription) the same way, through its router builders' arguments. What a feature
adds to the core chat path comes through two typed collaborators with a "nothing"
default, filled from the features' contributions (`Feature.drafts`, `Feature.after_turn`):
`AnswerDrafts` (streamed answers: bot/telegram/features/streaming.py) and `AfterTurn` (e.g. the
handoff the model opened in the turn: bot/telegram/features/handoff.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from aiogram.types import InlineKeyboardButton, Message

from bot.runtime.responder import Responder
from bot.telegram.outbox import Outbox
from bot.telegram.sender import Sender
from bot.telegram.texts import Language, Texts
from services.answer_stream import DraftSink
from services.chat import ChatService
from services.feedback import FeedbackService
from services.limits import UserMessageLimiter
from services.loop_types import TurnReply
from services.phones import PhoneVerification
from services.stats import StatsService
from storage.inbox import StoredReply
from tools.shop.examples import ShopExamplesReader


class AnswerDraft(DraftSink, Protocol):
    """One turn's streamed answer, with the customer's stop button (`stop` is set)."""

    stop: asyncio.Event


class AnswerDrafts(Protocol):
    """Whether a new turn may stream its answer now, and its draft while it runs."""

    def can_stream(self) -> bool: ...

    def stream(self, chat_id: int, update_id: int) -> AbstractAsyncContextManager[AnswerDraft]: ...


class NoDrafts:
    """Streaming off (STREAM_ANSWERS=false): every answer is sent whole, after the
    typing indicator."""

    def can_stream(self) -> bool:
        return False

    def stream(self, chat_id: int, update_id: int) -> AbstractAsyncContextManager[AnswerDraft]:
        raise RuntimeError("answers are not streamed")  # can_stream() said no


NO_DRAFTS = NoDrafts()


async def _nothing_more() -> None:
    return None


@dataclass(frozen=True, slots=True)
class TurnAddition:
    """What a feature adds to a turn's reply: `notice` (Markdown) under the answer,
    `also`: ready parts sent after it (e.g. to the operators' topic), `sent`: its work
    once the reply is stored and sent."""

    notice: str | None = None
    also: tuple[StoredReply, ...] = ()
    sent: Callable[[], Awaitable[None]] = _nothing_more


# a feature's look at a finished turn before its reply is sent (bot/telegram/routers/chat.py)
AfterTurn = Callable[[Message, TurnReply, "UpdateContext"], Awaitable[TurnAddition | None]]
# a feature's buttons for its offers under an answer in a private chat (bot/telegram/turn_view.py)
OfferRows = Callable[[TurnReply, Texts], list[list[InlineKeyboardButton]]]


@dataclass(frozen=True, slots=True)
class HandlerDeps:
    """The collaborators of the core routers (commands, chat, phone, feedback, admin).

    `limiter`: customers' messages, `command_limiter`: their commands, contacts and
    button presses (bot/telegram/limits.py), each USER_MESSAGES_PER_MINUTE/PER_DAY;
    `max_input_chars`: MAX_INPUT_CHARS; `feedback_buttons`: FEEDBACK_ENABLED (👍/👎 under
    AI answers). From the features (bot/telegram/features/): `drafts` (streamed answers; none by
    default), `after_turn` (their parts in a turn's reply, in order), `person_button` (a
    feature answers the "talk to a person" button: shown after a failed turn or a 👎),
    `offer_rows` (their offers' buttons under an answer, e.g. "notify me").
    """

    chat_service: ChatService
    limiter: UserMessageLimiter
    command_limiter: UserMessageLimiter
    responder: Responder
    sender: Sender
    stats: StatsService
    feedback: FeedbackService
    phones: PhoneVerification
    shop_examples: ShopExamplesReader  # the welcome's examples from the shop's data
    max_input_chars: int
    feedback_buttons: bool = True
    drafts: AnswerDrafts = NO_DRAFTS
    after_turn: tuple[AfterTurn, ...] = ()
    person_button: bool = False
    offer_rows: tuple[OfferRows, ...] = ()


@dataclass(frozen=True, slots=True)
class UpdateContext:
    """One update's own things, the handler parameter `ctx`: where its replies go
    (`outbox`, bound to its inbox row), its inbox id (`update_id`, the key of a replay),
    and the language of its replies with the shop's texts in it (`bot.telegram.filters.
    LanguageMiddleware`, the one place that chooses them)."""

    outbox: Outbox
    update_id: int
    language: Language
    texts: Texts
