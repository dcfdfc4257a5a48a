"""The bot's own words, in Russian and English, picked by the user's Telegram language.

A typed table instead of gettext catalogs: there are about fifteen fixed phrases and
two languages; aiogram's i18n would add Babel, .po/.mo compilation and a build step for
that. A frozen dataclass per language makes a missing translation a type error at import
time (every field is required), and tests can iterate over all of them.
Texts are written in the same Markdown subset the model uses (see `bot.formatting`).

`language_for` is the one rule that turns a Telegram user's `language_code` into the
language of a reply; `bot.filters.LanguageMiddleware` applies it once per update and
hands every handler its `language` and `texts` — no router decides it on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Language = Literal["ru", "en"]
LANGUAGES: tuple[Language, ...] = get_args(Language)
DEFAULT_LANGUAGE: Language = "ru"  # the shop's own language


@dataclass(frozen=True, slots=True)
class Texts:
    start: str
    help: str
    new_session: str
    text_only: str
    empty_message: str
    too_long: str  # {limit}
    unknown_command: str
    temporarily_unavailable: str
    refused: str
    apology: str
    rate_limited_notice: str
    # phone-verified ownership (bot/routers/phone.py)
    share_phone_button: str
    phone_hint: str  # added under an answer whose order lookup missed (with the button)
    phone_offer: str
    phone_offer_verified: str
    phone_saved: str
    contact_not_own: str
    contact_invalid: str
    phone_private_only: str
    phone_forgotten: str
    phone_nothing_to_forget: str

    def too_long_for(self, limit: int) -> str:
        return self.too_long.format(limit=limit)


RU = Texts(
    start=(
        "Здравствуйте! Я помощник поддержки магазина.\n\n"
        "Я могу:\n"
        "- подсказать, где сейчас ваш заказ;\n"
        "- рассказать об условиях возврата.\n\n"
        "Например, спросите:\n"
        "- *Где сейчас находится заказ 8041?*\n"
        "- *Можно ли вернуть наушники?*\n\n"
        "Чтобы начать разговор заново, отправьте /new. Справка — /help."
    ),
    help=(
        "Напишите вопрос обычным текстом — например, *«Где мой заказ 8041?»* "
        "или *«Как вернуть товар?»*.\n\n"
        "Команды:\n"
        "- /start — что я умею\n"
        "- /new — начать разговор заново\n"
        "- /help — эта справка"
    ),
    new_session="Хорошо, начинаем с чистого листа. Чем могу помочь?",
    text_only=(
        "Извините, я понимаю только текстовые сообщения. Напишите, пожалуйста, вопрос текстом."
    ),
    empty_message="Кажется, сообщение пустое. Напишите, пожалуйста, ваш вопрос.",
    too_long=(
        "Сообщение слишком длинное — я читаю до {limit} символов. "
        "Сократите его, пожалуйста, или разбейте на несколько."
    ),
    unknown_command="Такой команды я не знаю. Список команд — /help.",
    temporarily_unavailable=(
        "Сервис временно недоступен. Пожалуйста, попробуйте ещё раз через минуту."
    ),
    refused="Извините, с этим я помочь не могу. Спросите, пожалуйста, о заказе или возврате.",
    apology="Извините, что-то пошло не так. Попробуйте, пожалуйста, ещё раз.",
    rate_limited_notice=(
        "Вы отправляете сообщения слишком часто. Я отвечу, когда пройдёт немного времени."
    ),
    share_phone_button="Поделиться моим номером телефона",
    phone_hint=(
        "_Если заказ оформлен по номеру телефона, поделитесь номером кнопкой ниже "
        "и спросите ещё раз._"
    ),
    phone_offer=(
        "Если вы оформляли заказ по номеру телефона, поделитесь своим номером кнопкой ниже — "
        "тогда я покажу заказы, оформленные на этот номер. Номер хранится только для этого; "
        "удалить его можно командой /forget_phone."
    ),
    phone_offer_verified=(
        "Ваш номер телефона уже подтверждён. Чтобы заменить его, поделитесь номером "
        "кнопкой ниже; чтобы удалить — отправьте /forget_phone."
    ),
    phone_saved=(
        "Спасибо, номер подтверждён. Теперь я покажу заказы, оформленные на него. "
        "Удалить номер можно командой /forget_phone."
    ),
    contact_not_own=(
        "Извините, я принимаю только ваш собственный номер — отправьте его кнопкой "
        "«Поделиться моим номером телефона». Чужой контакт я не сохраняю."
    ),
    contact_invalid="Извините, этот номер телефона я не могу сохранить.",
    phone_private_only=(
        "Номером телефона можно поделиться только в личном чате со мной — напишите мне напрямую."
    ),
    phone_forgotten="Готово, ваш номер телефона удалён.",
    phone_nothing_to_forget="У меня нет вашего номера телефона — удалять нечего.",
)

EN = Texts(
    start=(
        "Hello! I am the shop's support assistant.\n\n"
        "I can:\n"
        "- tell you where your order is now;\n"
        "- explain the return policy.\n\n"
        "For example, ask:\n"
        "- *Where is my order 8041 now?*\n"
        "- *Can I return headphones?*\n\n"
        "To start the conversation over, send /new. Help: /help."
    ),
    help=(
        "Just write your question as text — for example, *“Where is my order 8041?”* "
        "or *“How do I return an item?”*.\n\n"
        "Commands:\n"
        "- /start — what I can do\n"
        "- /new — start the conversation over\n"
        "- /help — this help"
    ),
    new_session="Done, we are starting fresh. How can I help?",
    text_only="Sorry, I can read text messages only. Please write your question as text.",
    empty_message="The message looks empty. Please write your question.",
    too_long=(
        "The message is too long: I read up to {limit} characters. "
        "Please shorten it or split it into several messages."
    ),
    unknown_command="I don't know that command. See /help for the list.",
    temporarily_unavailable=(
        "The service is temporarily unavailable. Please try again in a minute."
    ),
    refused="Sorry, I can't help with that. Please ask about an order or a return.",
    apology="Sorry, something went wrong. Please try again.",
    rate_limited_notice=(
        "You are sending messages too often. I will answer again after a short pause."
    ),
    share_phone_button="Share my phone number",
    phone_hint=(
        "_If you placed the order with your phone number, share it with the button below "
        "and ask again._"
    ),
    phone_offer=(
        "If you placed your order with a phone number, share your number with the button "
        "below, and I will show the orders placed with it. The number is kept for this only; "
        "remove it any time with /forget_phone."
    ),
    phone_offer_verified=(
        "Your phone number is already verified. To replace it, share your number with the "
        "button below; to remove it, send /forget_phone."
    ),
    phone_saved=(
        "Thank you, your number is verified. I will now show the orders placed with it. "
        "To remove it, send /forget_phone."
    ),
    contact_not_own=(
        "Sorry, I can only accept your own number: please send it with the "
        "“Share my phone number” button. I do not keep other people's contacts."
    ),
    contact_invalid="Sorry, I cannot store this phone number.",
    phone_private_only=(
        "You can share your phone number only in a private chat with me: please write to me "
        "directly."
    ),
    phone_forgotten="Done, your phone number has been removed.",
    phone_nothing_to_forget="I do not have your phone number, so there is nothing to remove.",
)

_BY_LANGUAGE: dict[Language, Texts] = {"ru": RU, "en": EN}


def language_for(language_code: str | None) -> Language:
    """English for `en*`, Russian for everything else, a missing code included."""
    primary = (language_code or "").split("-")[0].lower()
    for language in LANGUAGES:
        if primary == language:
            return language
    return DEFAULT_LANGUAGE


def texts_for(language: Language) -> Texts:
    """The fixed phrases of one of our languages (choose it with `language_for`)."""
    return _BY_LANGUAGE[language]
