"""What a handler works with: the bot's collaborators, and the update it handles.

Handlers get their collaborators from the router builder that defines them
(`build_chat_router(deps)`: the handler's closure), so mypy checks that every one a
handler uses exists and has the type it expects; nothing is matched by parameter name
except `ctx`, the update's own context, and what aiogram or a filter of that handler puts
there (`bot`, `command`, ...). `tests/unit/bot/test_handler_dependencies.py` keeps it so.

`HandlerDeps` is built once by the wiring (bot/wiring/telegram.py) and never changes;
a feature (bot/features/) gives its own routers what only they need (the handoff desk,
the transcription) the same way, through its router builders' arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.drafts import Drafts
from bot.handoff import HandoffDesk
from bot.responder import Outbox, Responder
from bot.sender import Sender
from bot.texts import Language, Texts
from services.chat import ChatService
from services.feedback import FeedbackService
from services.limits import UserMessageLimiter
from services.phones import PhoneVerification
from services.stats import StatsService


@dataclass(frozen=True, slots=True)
class HandlerDeps:
    """The collaborators of the core routers (commands, chat, phone, feedback, admin).

    `limiter`: customers' messages, `command_limiter`: their commands, contacts and
    button presses (bot/limits.py), each USER_MESSAGES_PER_MINUTE/PER_DAY;
    `max_input_chars`: MAX_INPUT_CHARS; `feedback_buttons`: FEEDBACK_ENABLED (👍/👎 under
    AI answers); `order_updates`: ORDER_UPDATES_ENABLED ("notify me" under a customer's
    own order); `handoff`: the desk when OPERATOR_CHAT_ID is set, for the reply to a turn
    in which the model asked for a person (`send_answer`).
    """

    chat_service: ChatService
    limiter: UserMessageLimiter
    command_limiter: UserMessageLimiter
    responder: Responder
    sender: Sender
    stats: StatsService
    feedback: FeedbackService
    phones: PhoneVerification
    drafts: Drafts
    max_input_chars: int
    feedback_buttons: bool = True
    handoff: HandoffDesk | None = None
    order_updates: bool = False  # ORDER_UPDATES_ENABLED: "notify me" under own orders


@dataclass(frozen=True, slots=True)
class UpdateContext:
    """One update's own things, the handler parameter `ctx`: where its replies go
    (`outbox`, bound to its inbox row), its inbox id (`update_id`, the key of a replay),
    and the language of its replies with the shop's texts in it (`bot.filters.
    LanguageMiddleware`, the one place that chooses them)."""

    outbox: Outbox
    update_id: int
    language: Language
    texts: Texts
