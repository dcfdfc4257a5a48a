"""The words of actions with confirmation: the customer's (`ACTION_WORDS`, in their
language) and the staff's (`ACTION_STAFF_WORDS`, in the shop's DEFAULT_LANGUAGE, as every
staff word is: the request card, its ✅ Done / ✖ Refuse, the notes after a press, the
reminder, the attention and operators' lines). A shop's TEXTS_FILE rewords both by their
keys; a staff word's placeholders (`{order}`, `{action}`…) are filled in per message,
so a rewording keeps exactly those. The staff's lines name the customer by id only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.telegram.texts import Language, TextTable


@dataclass(frozen=True, slots=True)
class ActionWords:
    """What customers read of an action (in their language)."""

    action_confirm_button: str
    action_decline_button: str
    action_working: str  # the press's short note while the shop is asked
    action_not_yours: str  # the press's note: the card was sent to someone else
    action_already: str  # the press's note: what this card offered is already done
    action_answered: str  # the press's note: the card was answered, nothing more to do
    action_no_longer_offered: str  # the press's note: not an offer of this chat (any more)
    action_not_supported: str  # the shop answered that it does not do this; nothing changed
    action_needs_attention: str  # the shop never confirmed: a person checks and writes
    action_declined: str
    action_expired: str  # the card is too old, or a newer card for the order replaced it
    action_state_changed: str  # on ✅ the order no longer allows it (e.g. shipped)
    action_failed: str  # the shop refused or could not be reached; nothing changed
    action_checking: str  # the shop's answer stayed unknown: asked again in the background
    action_requested: str  # imported data: sent to the shop's people, a person confirms
    action_refused: str  # a person refused the request; their reason follows


ACTION_WORDS: Mapping[Language, ActionWords] = {
    "ru": ActionWords(
        action_confirm_button="✅ Подтвердить",
        action_decline_button="✖ Не нужно",
        action_working="Выполняю…",
        action_not_yours="Эта кнопка — не для вас.",
        action_already="Это уже сделано.",
        action_answered="На эту карточку уже ответили.",
        action_no_longer_offered="Это предложение больше не действует.",
        action_needs_attention=(
            "Магазин так и не подтвердил, выполнено ли это действие. Сотрудник магазина "
            "проверит и напишет вам; нажимать ещё раз не нужно."
        ),
        action_not_supported=(
            "К сожалению, магазин не выполняет это действие через бота, ничего не изменилось. "
            "Если нужно, пожалуйста, свяжитесь с магазином напрямую."
        ),
        action_declined="Хорошо, ничего не меняю.",
        action_expired=(
            "Это подтверждение устарело — ничего не изменено. Если нужно, попросите ещё раз."
        ),
        action_state_changed=(
            "Не получилось: заказ за это время изменился, и сделать это уже нельзя. "
            "Ничего не изменено."
        ),
        action_failed=(
            "Не получилось: магазин не смог это выполнить, ничего не изменено. "
            "Попробуйте позже или свяжитесь с магазином."
        ),
        action_checking=(
            "Магазин пока не подтвердил результат. Я проверю ещё раз сам и напишу вам; "
            "повторно ничего не выполняется."
        ),
        action_requested=(
            "Запрос передан сотрудникам магазина. Пока ничего не изменилось: сотрудник "
            "проверит и подтвердит, а я сразу напишу вам здесь."
        ),
        action_refused="К сожалению, магазин не может это выполнить. Ответ сотрудника:",
    ),
    "en": ActionWords(
        action_confirm_button="✅ Confirm",
        action_decline_button="✖ No, thanks",
        action_working="Working on it…",
        action_not_yours="This button is not for you.",
        action_already="This has already been done.",
        action_answered="This card has already been answered.",
        action_no_longer_offered="This offer is no longer available.",
        action_needs_attention=(
            "The shop has not confirmed whether this was done. A member of the shop's staff "
            "will check and write to you; there is no need to press again."
        ),
        action_not_supported=(
            "Sorry, the shop does not do this through the bot; nothing was changed. "
            "If you need it, please contact the shop directly."
        ),
        action_declined="All right, nothing was changed.",
        action_expired=(
            "This confirmation has expired, nothing was changed. Ask again if you still need it."
        ),
        action_state_changed=(
            "That did not work: the order has changed in the meantime and this is no longer "
            "possible. Nothing was changed."
        ),
        action_failed=(
            "That did not work: the shop could not do it, nothing was changed. Please try "
            "again later or contact the shop."
        ),
        action_checking=(
            "The shop has not confirmed the result yet. I will check again and write to you; "
            "nothing is done twice."
        ),
        action_requested=(
            "I have passed your request to the shop's staff. Nothing has changed yet: a person "
            "will check and confirm, and I will write to you here as soon as they do."
        ),
        action_refused="Sorry, the shop cannot do this. The staff's answer:",
    ),
}


@dataclass(frozen=True, slots=True)
class ActionStaffWords:
    """What the shop's people read of actions (in the shop's language). Placeholders:
    `{action}` the action's name, `{order}` the order's number, `{customer}` the customer's
    Telegram id, `{op}` the operation's short id, `{details}` the card the customer saw,
    `{reference}` the shop's reference (", R-1" or nothing), `{answer}` the shop's last
    answer, `{hours}` how long a request has waited."""

    staff_request_card: str  # {action} {order} {customer} {op} {details}
    staff_done_button: str
    staff_refuse_button: str
    staff_ask_reason: str  # {order}: after ✖ Refuse, the reason is their next message
    staff_recorded_done: str  # {order}: after ✅ Done
    staff_refused: str  # {order}: after the reason was written
    staff_already_answered: str  # the note on a button of a card already answered
    staff_refusal_already: str  # {order}: a reason for a card already answered
    staff_action_done: str  # {action} {order} {reference} {customer} {op}: operators' line
    staff_attention: str  # {action} {order} {answer} {customer} {op}
    staff_no_answer: str  # {answer} when the shop never answered at all
    staff_reminder: str  # {order} {op} {hours}: a request nobody answered in time

    def request_card(self, *, action: str, order: str, customer: int, op: str, details: str) -> str:
        return self.staff_request_card.format(
            action=action, order=order, customer=customer, op=op, details=details
        )

    def action_done(
        self, *, action: str, order: str, reference: str, customer: int, op: str
    ) -> str:
        return self.staff_action_done.format(
            action=action, order=order, reference=reference, customer=customer, op=op
        )

    def attention(self, *, action: str, order: str, answer: str, customer: int, op: str) -> str:
        return self.staff_attention.format(
            action=action, order=order, answer=answer, customer=customer, op=op
        )

    def reminder(self, *, order: str, op: str, hours: float) -> str:
        return self.staff_reminder.format(order=order, op=op, hours=f"{hours:.1f}")

    def for_order(self, key: str, order: str) -> str:
        """A one-placeholder staff note (`staff_ask_reason`…) with its {order} filled in."""
        return str(getattr(self, key)).format(order=order)


ACTION_STAFF_WORDS: Mapping[Language, ActionStaffWords] = {
    "ru": ActionStaffWords(
        staff_request_card=(
            "🛎 Запрос: {action}, заказ {order} — клиент {customer}, op {op}.\n{details}\n"
            "Бот в магазине ничего не менял. Сделайте это в магазине и нажмите ✅ Готово "
            "(клиенту сообщат, что сделано) или ✖ Отказать и напишите причину для клиента."
        ),
        staff_done_button="✅ Готово",
        staff_refuse_button="✖ Отказать",
        staff_ask_reason=(
            "✖ Заказ {order}: напишите причину следующим сообщением здесь — её прочтёт клиент."
        ),
        staff_recorded_done="✅ Заказ {order}: отмечено как сделанное, клиенту сообщено.",
        staff_refused="✖ Заказ {order}: отказано, клиенту передана ваша причина.",
        staff_already_answered="На запрос уже ответили.",
        staff_refusal_already="Заказ {order}: на запрос уже ответили, ничего не отправлено.",
        staff_action_done="✅ {action}: заказ {order}{reference} — клиент {customer}, op {op}",
        staff_attention=(
            "⚠️ {action}: заказ {order} требует проверки — магазин так и не подтвердил "
            "результат (его последний ответ: {answer}). Клиент {customer}, op {op}. "
            "Проверьте заказ в магазине и сообщите клиенту."
        ),
        staff_no_answer="ответа не было",
        staff_reminder=(
            "⏰ Напоминание: на запрос по заказу {order} (op {op}) нет ответа уже {hours} ч. "
            "Клиент ждёт: нажмите ✅ Готово или ✖ Отказать на его карточке."
        ),
    ),
    "en": ActionStaffWords(
        staff_request_card=(
            "🛎 Request: {action}, order {order} — customer {customer}, op {op}.\n{details}\n"
            "The bot has not changed the shop. Do it in the shop, then press ✅ Done (the "
            "customer is told it is done); or ✖ Refuse and write the reason for the customer."
        ),
        staff_done_button="✅ Done",
        staff_refuse_button="✖ Refuse",
        staff_ask_reason=(
            "✖ Order {order}: write the reason in your next message here; "
            "the customer will read it."
        ),
        staff_recorded_done="✅ Order {order}: recorded as done; the customer is told.",
        staff_refused="✖ Order {order}: refused; the customer is told your reason.",
        staff_already_answered="Already answered.",
        staff_refusal_already="Order {order}: already answered; nothing sent.",
        staff_action_done="✅ {action}: order {order}{reference} — customer {customer}, op {op}",
        staff_attention=(
            "⚠️ {action}: order {order} needs a person's check — the shop never confirmed "
            "the outcome (its last answer: {answer}). Customer {customer}, op {op}. Please "
            "check the order in the shop and tell the customer."
        ),
        staff_no_answer="no answer",
        staff_reminder=(
            "⏰ Reminder: the request for order {order} (op {op}) has had no answer for "
            "{hours} h. The customer is waiting: press ✅ Done or ✖ Refuse on its card."
        ),
    ),
}


def staff_words(texts: TextTable) -> ActionStaffWords:
    """The staff's words: the shop's default language, as the shop worded them."""
    return texts.by_language[texts.default_language].of(ACTION_STAFF_WORDS)


def staff_language(texts: TextTable) -> Language:
    """The language of the staff's words (the action's card inside a request card too)."""
    return texts.default_language
