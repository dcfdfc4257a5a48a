"""Confirmed actions nobody moved on end, and the people concerned are told once.

`ActionService.sweep` (services/actions.py) asks the shop again, with the same operation
id, about every action whose press died or whose outcome stayed unknown, within its
bound (ACTION_RETRY_ATTEMPTS, ACTION_RETRY_FIRST_S doubling). This worker runs it now
and then and sends what ended: the customer gets the result in the language of their
press (done, refused, or "a person will check"); an action that needs attention is told
to the admins (ADMIN_IDS, privately) and, with handoff on, the operators' group, with
the order and the shop's last answer — never the customer's words. Told once: only the
sweep whose record won reports an action. A request to the shop's people (local backend)
the sweep carried out after a press died gets its request card here; a request nobody
answered in ACTION_REQUEST_ESCALATE_S is reminded of once.

Nothing here is sent directly: every message is stored in the durable outbox
(storage/outgoing.py) in the same transaction as the record it tells of, and delivered
by `OutgoingDelivery` (bot/telegram/outgoing.py) — retried while Telegram cannot be
reached, sent once — so a crash or an outage at that moment loses no message.
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Iterable

from aiogram.types import InlineKeyboardMarkup

from bot.telegram.action_words import ActionStaffWords, staff_words
from bot.telegram.formatting import markdown_to_messages
from bot.telegram.keyboards import markup_to_json, request_keyboard
from bot.telegram.outgoing import OutgoingDelivery
from bot.telegram.routers.actions import Staff, operators_line, request_card, result_words
from bot.telegram.texts import TextTable, language_for
from services.actions import ActionService, Outcome, Press, ResultKind
from storage.actions import ActionRequest, ActionRow
from storage.outgoing import Outgoing

log = logging.getLogger(__name__)


def attention_line(row: ActionRow, outcome: Outcome, words: ActionStaffWords) -> str:
    """The shop's people's line about an action whose outcome stayed unknown."""
    answer = outcome.detail or row.last_answer or words.staff_no_answer
    return words.attention(
        action=row.action,
        order=row.order_number,
        answer=answer,
        customer=row.user_id,
        op=row.operation_id[:8],
    )


class ActionSweeper:
    def __init__(
        self,
        service: ActionService,
        delivery: OutgoingDelivery,
        texts: TextTable,
        *,
        staff_chats: Iterable[int],
        operator_chat_id: int | None,
        every_s: float,
        staff: Staff | None = None,
        escalate_after_s: float | None = None,
    ) -> None:
        self._requests_staff = staff
        self._escalate_after_s = escalate_after_s
        self._service = service
        self._delivery = delivery
        self._texts = texts
        self._staff_words = staff_words(texts)  # in the shop's language
        self._staff = tuple(dict.fromkeys(staff_chats))
        self._operators = operator_chat_id
        self._every_s = every_s

    async def run(self) -> None:
        try:
            await self._delivery.forget_old()
        except Exception:
            log.exception("actions: pruning sent messages failed")
        while True:
            try:
                await self.sweep_once()
            except Exception:
                log.exception("actions: a sweep failed; trying again later")
            await asyncio.sleep(self._every_s)

    async def sweep_once(self) -> list[Press]:
        """One sweep and its reminders (their messages stored with their records), then
        every message of the outbox that is due (new ones, and ones Telegram could not
        take before)."""
        ended = await self._service.sweep(self._history, self._tell)
        if self._escalate_after_s is not None and self._requests_staff is not None:
            await self._service.due_requests(self._escalate_after_s, self._reminders)
        await self._delivery.deliver_due()
        return ended

    def _reminders(self, request: ActionRequest) -> list[Outgoing]:
        """One reminder per staff chat for a request nobody answered in time."""
        assert self._escalate_after_s is not None and self._requests_staff is not None
        line = self._staff_words.reminder(
            order=request.order_number,
            op=request.operation_id[:8],
            hours=self._escalate_after_s / 3600,
        )
        key = f"request:{request.operation_id}:reminder"
        return [_plain(f"{key}:{chat}", chat, line) for chat in self._requests_staff.chats]

    def _words(self, row: ActionRow, outcome: Outcome) -> str:
        language = language_for(row.language)
        return result_words(outcome, self._texts.by_language[language], language)

    def _history(self, row: ActionRow, outcome: Outcome) -> str:
        language = language_for(row.language)
        return f"{self._service.card_words(row, language)}\n{self._words(row, outcome)}"

    def _tell(self, row: ActionRow, outcome: Outcome) -> list[Outgoing]:
        """What tells of an action the sweep ended: the customer's result, and the staff's
        card, line or the operators' line."""
        key = f"action:{row.operation_id}"
        (part, *_) = markdown_to_messages(self._words(row, outcome))
        messages = [Outgoing(f"{key}:customer", row.chat_id, part.html, part.plain)]
        if outcome.kind is ResultKind.REQUESTED and self._requests_staff is not None:
            staff = self._requests_staff
            card = request_card(row, self._service.card_words(row, staff.language), staff.words)
            markup = request_keyboard(row.operation_id, staff.words)
            messages += [
                _plain(f"{key}:request:{chat}", chat, card, markup)
                for chat in self._requests_staff.chats
            ]
        elif outcome.kind is ResultKind.NEEDS_ATTENTION:
            line = attention_line(row, outcome, self._staff_words)
            chats = (*self._staff, *((self._operators,) if self._operators else ()))
            messages += [_plain(f"{key}:attention:{chat}", chat, line) for chat in chats]
        elif outcome.kind is ResultKind.DONE and self._operators is not None:
            line = operators_line(row, outcome, self._staff_words)
            messages.append(_plain(f"{key}:operators", self._operators, line))
        return messages


def _plain(
    key: str, chat_id: int, words: str, markup: InlineKeyboardMarkup | None = None
) -> Outgoing:
    """A staff message: the words as they are (escaped, never read as markup)."""
    return Outgoing(
        key,
        chat_id,
        html.escape(words, quote=False),
        words,
        None if markup is None else markup_to_json(markup),
    )
