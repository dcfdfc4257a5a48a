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
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Iterable

from aiogram.types import InlineKeyboardMarkup

from bot.telegram.formatting import markdown_to_messages
from bot.telegram.keyboards import request_keyboard
from bot.telegram.routers.actions import Staff, operators_line, request_card, result_words
from bot.telegram.sender import Sender
from bot.telegram.texts import TextTable, language_for
from services.actions import ActionService, Outcome, Press, ResultKind
from storage.actions import ActionRow

log = logging.getLogger(__name__)


def attention_line(row: ActionRow, outcome: Outcome) -> str:
    """The shop's people's line about an action whose outcome stayed unknown."""
    answer = outcome.detail or row.last_answer or "no answer"
    return (
        f"⚠️ {row.action}: order {row.order_number} needs a person's check — the shop never "
        f"confirmed the outcome (its last answer: {answer}). Customer {row.user_id}, "
        f"op {row.operation_id[:8]}. Please check the order in the shop and tell the customer."
    )


class ActionSweeper:
    def __init__(
        self,
        service: ActionService,
        sender: Sender,
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
        self._sender = sender
        self._texts = texts
        self._staff = tuple(dict.fromkeys(staff_chats))
        self._operators = operator_chat_id
        self._every_s = every_s

    async def run(self) -> None:
        while True:
            try:
                await self.sweep_once()
            except Exception:
                log.exception("actions: a sweep failed; trying again later")
            await asyncio.sleep(self._every_s)

    async def sweep_once(self) -> list[Press]:
        ended = await self._service.sweep(self._history)
        for press in ended:
            await self._tell(press)
        await self._remind()
        return ended

    async def _remind(self) -> None:
        """One reminder per request nobody answered in time."""
        if self._escalate_after_s is None or self._requests_staff is None:
            return
        for request in await self._service.due_requests(self._escalate_after_s):
            hours = self._escalate_after_s / 3600
            line = (
                f"⏰ Reminder: the request for order {request.order_number} "
                f"(op {request.operation_id[:8]}) has had no answer for {hours:.1f} h. "
                "The customer is waiting: press ✅ Done or ✖ Refuse on its card."
            )
            for chat in self._requests_staff.chats:
                await self._send(chat, line, plain=True)

    def _words(self, row: ActionRow, outcome: Outcome) -> str:
        language = language_for(row.language)
        return result_words(outcome, self._texts.by_language[language], language)

    def _history(self, row: ActionRow, outcome: Outcome) -> str:
        language = language_for(row.language)
        return f"{self._service.card_words(row, language)}\n{self._words(row, outcome)}"

    async def _tell(self, press: Press) -> None:
        row, outcome = press.row, press.outcome
        if row is None or outcome is None:
            return
        await self._send(row.chat_id, self._words(row, outcome))
        if outcome.kind is ResultKind.REQUESTED and self._requests_staff is not None:
            card = request_card(row, self._service.card_words(row, "en"))
            for chat in self._requests_staff.chats:
                await self._send(chat, card, plain=True, markup=request_keyboard(row.operation_id))
        elif outcome.kind is ResultKind.NEEDS_ATTENTION:
            line = attention_line(row, outcome)
            for chat in (*self._staff, *((self._operators,) if self._operators else ())):
                await self._send(chat, line, plain=True)
        elif outcome.kind is ResultKind.DONE and self._operators is not None:
            await self._send(self._operators, operators_line(row, outcome), plain=True)

    async def _send(
        self,
        chat_id: int,
        words: str,
        *,
        plain: bool = False,
        markup: InlineKeyboardMarkup | None = None,
    ) -> None:
        if plain:
            result = await self._sender.send_text(
                chat_id,
                html.escape(words, quote=False),
                parse_mode="HTML",
                plain_text=words,
                reply_markup=markup,
            )
        else:
            (part, *_) = markdown_to_messages(words)
            result = await self._sender.send_text(
                chat_id, part.html, parse_mode="HTML", plain_text=part.plain
            )
        if result.status != "delivered":
            log.warning(
                "actions: a message about an ended action was not delivered (%s)",
                result.reason or result.status,
            )
