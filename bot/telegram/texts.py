"""The bot's own words, in Russian and English, picked by the user's Telegram language.

A typed table instead of gettext catalogs: there are about fifteen fixed phrases and
two languages; aiogram's i18n would add Babel, .po/.mo compilation and a build step for
that. A frozen dataclass per language makes a missing translation a type error at import
time (every field is required), and tests can iterate over all of them.
Texts are written in the same Markdown subset the model uses (see `bot.telegram.formatting`).

A shop makes the words its own at start-up (`load_text_table`): `SHOP_NAME` names the
shop in the welcome, and an optional TOML file (`TEXTS_FILE`) replaces any text in
either language. The file is validated whole before the bot starts — unknown languages
or keys, a placeholder a text may not use or one it must use, a text that does not fit
one message — and a problem is one `TextsError` line naming `TEXTS_FILE`. The result is
a `TextTable`: the effective `Texts` per language and the default language.

Placeholders (`str.format` syntax, a literal brace is written `{{` or `}}`):
`{contacts}` — the `contacts` text (how to reach the shop other than through this
assistant), which every welcome must contain; `{shop_name}` — `SHOP_NAME`, only when it
is set; `{limit}` — in `too_long` only, and required there; `{commands}` — in `help`
only: the commands of the customers' menu, one a line (`bot.telegram.menu.help_with_commands`
fills it in from the same menu entries Telegram lists, so a feature's command is there
exactly when the feature is on); `{examples}` — in `start` only: what the assistant can
do and example questions from the shop's own data, filled in at each `/start`
(bot/telegram/welcome.py). All but `{limit}` and `{examples}` are filled in once at start-up.

`TextTable.choose` is the one rule that turns a Telegram user's `language_code` into the
language of a reply (`language_for`); `bot.telegram.filters.LanguageMiddleware` applies it once
per update and hands every handler its `language` and `texts` — no router decides it on
its own.
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

# re-exported: the texts' users name the languages from here
from bot.runtime.languages import DEFAULT_LANGUAGE as DEFAULT_LANGUAGE
from bot.runtime.languages import LANGUAGES as LANGUAGES
from bot.runtime.languages import Language as Language
from bot.telegram.formatting import TELEGRAM_TEXT_LIMIT, markdown_to_messages

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

W = TypeVar("W", bound="DataclassInstance")

# An override file is a few kilobytes of words; anything far larger is a mistake.
MAX_TEXTS_FILE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Texts:
    # whose words these are, and the features' words (declared in the features' modules,
    # `FeatureSpec.words`; TEXTS_FILE and SHOP_NAME applied), read typed with `of`
    language: Language = field(default=DEFAULT_LANGUAGE, kw_only=True)
    features: Mapping[str, str] = field(default_factory=dict, kw_only=True)

    def of(self, words: Mapping[Language, W]) -> W:
        """A feature's words in this language, as the shop made them (`words`: the
        feature's built-in ones, per language: a frozen dataclass of strings)."""
        builtin = words[self.language]
        mine = {f.name: self.features[f.name] for f in fields(builtin) if f.name in self.features}
        return replace(builtin, **mine) if mine else builtin

    start: str  # {contacts} required, {shop_name}
    help: str  # {commands}: the customers' commands menu, filled in by bot/telegram/menu.py
    contacts: str  # how to reach the shop otherwise; {shop_name}
    new_session: str
    new_admins_only: str  # /new in a group from a member who is not one of its admins
    text_only: str
    empty_message: str
    too_long: str  # {limit} required, filled in per message
    unknown_command: str
    temporarily_unavailable: str
    refused: str
    stopped: str  # the customer stopped a streamed answer before any of it was written
    cut_short: str  # added under an answer ANSWER_MAX_TOKENS cut off
    apology: str
    rate_limited_notice: str
    # phone-verified ownership (bot/telegram/routers/phone.py)
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
    # 👍/👎 under an answer (bot/telegram/routers/feedback.py): the short notes of the press
    feedback_thanks: str
    feedback_refused: str  # the button does not name an answer of this chat
    feedback_not_asker: str  # in a group, someone other than the asker pressed
    # the commands menu (bot/telegram/menu.py): plain words, at most 256 characters each
    menu_start: str
    menu_help: str
    menu_new: str
    menu_phone: str
    menu_forget_phone: str
    menu_stats: str  # admins only

    def too_long_for(self, limit: int) -> str:
        return self.too_long.format(limit=limit)

    def start_with(self, examples: str) -> str:
        """The welcome with `{examples}` (kept through the start-up formatting) filled in."""
        return self.start.replace(f"{{{EXAMPLES_PLACEHOLDER}}}", examples)


TEXT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Texts) if not f.kw_only)
# the commands menu's words (Telegram: a command's description takes 1-256 characters)
MENU_PREFIX = "menu_"
MENU_WORDS_LIMIT = 256
# Which placeholders a text may use, and which it must (see the module docstring).
_RUNTIME_PLACEHOLDERS: Mapping[str, frozenset[str]] = {"too_long": frozenset({"limit"})}
_RUNTIME_KEYS = frozenset(_RUNTIME_PLACEHOLDERS)
_REQUIRED: Mapping[str, frozenset[str]] = {
    "start": frozenset({"contacts"}),
    **_RUNTIME_PLACEHOLDERS,
}
# in `help`: kept through the start-up formatting, filled in from the menu (bot/telegram/menu.py)
COMMANDS_PLACEHOLDER = "commands"
# in `start`: kept through the start-up formatting, filled in at each /start
# (bot/telegram/welcome.py)
EXAMPLES_PLACEHOLDER = "examples"
# room for the examples when checking that a welcome fits one message
_LONGEST_EXAMPLES = "x" * 1000


def allowed_placeholders(key: str) -> frozenset[str]:
    if key in _RUNTIME_KEYS:
        return _RUNTIME_PLACEHOLDERS[key]
    if key == "contacts":
        return frozenset({"shop_name"})
    if key == "help":
        return frozenset({"shop_name", "contacts", COMMANDS_PLACEHOLDER})
    if key == "start":
        return frozenset({"shop_name", "contacts", EXAMPLES_PLACEHOLDER})
    return frozenset({"shop_name", "contacts"})


_RU_START_BODY = (
    "\n\n{examples}\n\n{contacts}\n\nЧтобы начать разговор заново, отправьте /new. Справка — /help."
)
_RU_AI = "Я — ИИ-ассистент, то есть программа, а не человек, и могу ошибаться."

RU_TEMPLATES = Texts(
    start=f"Здравствуйте! Это поддержка магазина. {_RU_AI}{_RU_START_BODY}",
    help=(
        "Напишите вопрос обычным текстом — например, *«Где мой заказ?»* с его номером "
        "или *«Как вернуть товар?»*.\n\n"
        "Команды:\n"
        "{commands}\n\n"
        "{contacts}"
    ),
    contacts=(
        "Чтобы поговорить с сотрудником магазина, воспользуйтесь контактами на сайте магазина."
    ),
    new_session="Хорошо, начинаем с чистого листа. Чем могу помочь?",
    new_admins_only="В группе начать разговор заново могут только её администраторы.",
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
    stopped="Остановлено. Напишите, если нужна помощь.",
    cut_short="(Ответ получился слишком длинным и обрезан. Напишите «продолжи», если нужно.)",
    apology="Извините, что-то пошло не так. Попробуйте, пожалуйста, ещё раз.",
    rate_limited_notice=(
        "Вы отправляете сообщения слишком часто, поэтому ответы приостановлены. "
        "На сообщения, отправленные во время паузы, ответа не будет — "
        "напишите, пожалуйста, ещё раз позже."
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
    feedback_thanks="Спасибо за оценку!",
    feedback_refused="Этот ответ здесь оценить нельзя.",
    feedback_not_asker="Оценить ответ может только тот, кто задал вопрос.",
    menu_start="Что умеет бот",
    menu_help="Справка",
    menu_new="Начать разговор заново",
    menu_phone="Подтвердить номер телефона",
    menu_forget_phone="Удалить мой номер телефона",
    menu_stats="Статистика поддержки",
)

_EN_START_BODY = (
    "\n\n{examples}\n\n{contacts}\n\nTo start the conversation over, send /new. Help: /help."
)
_EN_AI = "I am an AI assistant: a program, not a person, and I can make mistakes."

EN_TEMPLATES = Texts(
    start=f"Hello! This is the shop's support. {_EN_AI}{_EN_START_BODY}",
    help=(
        "Just write your question as text — for example, *“Where is my order?”* with its "
        "number, or *“How do I return an item?”*.\n\n"
        "Commands:\n"
        "{commands}\n\n"
        "{contacts}"
    ),
    contacts="To talk to a person at the shop, use the contacts on the shop's website.",
    new_session="Done, we are starting fresh. How can I help?",
    new_admins_only="In a group, only its admins can start the conversation over.",
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
    stopped="Stopped. Write again if you need help.",
    cut_short="(The answer was too long and was cut short. Write “continue” if you need more.)",
    apology="Sorry, something went wrong. Please try again.",
    rate_limited_notice=(
        "You are sending messages too often, so answers are paused. Messages sent "
        "during the pause will not be answered — please write again later."
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
    feedback_thanks="Thank you for the rating!",
    feedback_refused="This answer cannot be rated here.",
    feedback_not_asker="Only the person who asked can rate this answer.",
    menu_start="What the bot can do",
    menu_help="Help",
    menu_new="Start the conversation over",
    menu_phone="Verify my phone number",
    menu_forget_phone="Remove my phone number",
    menu_stats="Support statistics",
)

_TEMPLATES: dict[Language, Texts] = {"ru": RU_TEMPLATES, "en": EN_TEMPLATES}
# The welcome when SHOP_NAME is set (and the file does not replace the welcome).
_NAMED_START: dict[Language, str] = {
    "ru": f"Здравствуйте! Это поддержка магазина «{{shop_name}}». {_RU_AI}{_RU_START_BODY}",
    "en": f"Hello! This is the support of {{shop_name}}. {_EN_AI}{_EN_START_BODY}",
}


class TextsError(ValueError):
    """One line saying what is wrong with the texts; it starts with `TEXTS_FILE`."""


def _placeholders(text: str) -> set[str]:
    """The `{name}` fields of `text`; `ValueError` for what `str.format` cannot take."""
    names: set[str] = set()
    for _literal, name, spec, conversion in string.Formatter().parse(text):
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise ValueError(f"{{{name}}} is not a placeholder (write a brace as {{{{ or }}}})")
        names.add(name)
    return names


def _check_placeholders(key: str, text: str, *, shop_name: str | None) -> str | None:
    """The problem with `text`'s placeholders as the text `key`, or None."""
    try:
        used = _placeholders(text)
    except ValueError as exc:
        return str(exc)
    unknown = used - allowed_placeholders(key)
    if unknown:
        allowed = ", ".join(f"{{{n}}}" for n in sorted(allowed_placeholders(key))) or "none"
        return f"unknown placeholder {{{sorted(unknown)[0]}}} (allowed here: {allowed})"
    missing = _REQUIRED.get(key, frozenset()) - used
    if missing:
        return f"must contain the placeholder {{{sorted(missing)[0]}}}"
    if "shop_name" in used and not shop_name:
        return "uses {shop_name} but SHOP_NAME is not set"
    return None


def _fits_one_message(text: str) -> bool:
    return len(markdown_to_messages(text)) == 1


@dataclass(frozen=True, slots=True)
class TextTable:
    """The effective texts of every language, and the language for everyone else."""

    by_language: Mapping[Language, Texts]
    default_language: Language = DEFAULT_LANGUAGE
    overridden: Mapping[Language, frozenset[str]] = field(default_factory=dict)

    def choose(self, language_code: str | None) -> tuple[Language, Texts]:
        language = language_for(language_code, default=self.default_language)
        return language, self.by_language[language]


def language_for(language_code: str | None, *, default: Language = DEFAULT_LANGUAGE) -> Language:
    """Ours when the code's primary tag is one of ours (`en-GB` → en), else `default`
    (a missing code included)."""
    primary = (language_code or "").split("-")[0].lower()
    for language in LANGUAGES:
        if primary == language:
            return language
    return default


def _effective(
    language: Language, overrides: Mapping[str, str], shop_name: str | None
) -> tuple[Texts, list[str]]:
    """The texts of `language` with `overrides` and the shop name, and the problems."""
    template = _TEMPLATES[language]
    if shop_name and "start" not in overrides:
        template = replace(template, start=_NAMED_START[language])
    given: dict[str, Any] = dict(overrides)  # texts only: checked against TEXT_KEYS
    template = replace(template, **given)
    problems = []
    for key, text in overrides.items():
        problem = _check_placeholders(key, text, shop_name=shop_name)
        if problem:
            problems.append(f"[{language}] {key}: {problem}")
    if problems:
        return template, problems
    contacts = template.contacts.format(shop_name=shop_name)
    values = {
        key: getattr(template, key).format(
            shop_name=shop_name,
            contacts=contacts,
            commands=f"{{{COMMANDS_PLACEHOLDER}}}",
            examples=f"{{{EXAMPLES_PLACEHOLDER}}}",
        )
        for key in TEXT_KEYS
        if key not in _RUNTIME_KEYS
    }
    texts = replace(template, **values)
    for key in TEXT_KEYS:
        if key.startswith(MENU_PREFIX):
            if not 1 <= len(getattr(texts, key).strip()) <= MENU_WORDS_LIMIT:
                problems.append(f"[{language}] {key}: a menu entry takes 1-256 characters")
        elif not _fits_one_message(_shown(texts, key)):
            problems.append(f"[{language}] {key}: too long for one Telegram message")
    return texts, problems


def _shown(texts: Texts, key: str) -> str:
    """The text as a customer may see it at its longest (runtime placeholders filled)."""
    if key == "too_long":
        return texts.too_long_for(TELEGRAM_TEXT_LIMIT)
    if key == "start":
        return texts.start_with(_LONGEST_EXAMPLES)
    return str(getattr(texts, key))


def build_text_table(
    *,
    overrides: Mapping[Language, Mapping[str, str]] | None = None,
    shop_name: str | None = None,
    default_language: Language = DEFAULT_LANGUAGE,
    source: str = "TEXTS_FILE",
    features: Mapping[Language, Mapping[str, str]] | None = None,
) -> TextTable:
    """The effective texts; `TextsError` (one line, naming `source`) for bad overrides.
    `features`: the features' built-in words (`FeatureSpec.words`), which the overrides
    may replace like any text."""
    overrides = overrides or {}
    features = features or {}
    by_language: dict[Language, Texts] = {}
    problems: list[str] = []
    for language in LANGUAGES:
        given = overrides.get(language, {})
        builtin = features.get(language, {})
        core = {k: v for k, v in given.items() if k not in builtin}
        texts, found = _effective(language, core, shop_name)
        words, also = _feature_words(language, builtin, given, shop_name, texts.contacts)
        by_language[language] = replace(texts, language=language, features=words)
        problems.extend(found + also)
    if problems:
        raise TextsError(f"{source}: {'; '.join(problems)}")
    return TextTable(
        by_language=by_language,
        default_language=default_language,
        overridden={lang: frozenset(overrides.get(lang, {})) for lang in LANGUAGES},
    )


def _feature_words(
    language: Language,
    builtin: Mapping[str, str],
    overrides: Mapping[str, str],
    shop_name: str | None,
    contacts: str,
) -> tuple[dict[str, str], list[str]]:
    """The features' words of `language` with the overrides, and the problems. A word's
    own placeholders (those of its built-in text, e.g. `{order}`) are filled in per
    message, so an override must use exactly those; a word without any may use
    `{shop_name}` and `{contacts}`, filled in here — the rules of the bot's own texts."""
    words: dict[str, str] = {}
    problems: list[str] = []
    for key, default in builtin.items():
        own = frozenset(_placeholders(default) - {"shop_name", "contacts"})
        text = overrides.get(key, default)
        problem = _check_feature_placeholders(text, own, shop_name=shop_name)
        if problem is None:
            if not own:
                text = text.format(shop_name=shop_name, contacts=contacts)
            problem = _feature_word_size(key, text, own)
        if problem:
            problems.append(f"[{language}] {key}: {problem}")
        words[key] = text
    return words, problems


def _check_feature_placeholders(
    text: str, own: frozenset[str], *, shop_name: str | None
) -> str | None:
    try:
        used = _placeholders(text)
    except ValueError as exc:
        return str(exc)
    allowed = own or frozenset({"shop_name", "contacts"})
    unknown = used - allowed
    if unknown:
        shown = ", ".join(f"{{{n}}}" for n in sorted(allowed))
        return f"unknown placeholder {{{sorted(unknown)[0]}}} (allowed here: {shown})"
    missing = own - used
    if missing:
        return f"must contain the placeholder {{{sorted(missing)[0]}}}"
    if "shop_name" in used and not shop_name:
        return "uses {shop_name} but SHOP_NAME is not set"
    return None


def _feature_word_size(key: str, text: str, own: frozenset[str]) -> str | None:
    if key.startswith(MENU_PREFIX):
        ok = 1 <= len(text.strip()) <= MENU_WORDS_LIMIT
        return None if ok else "a menu entry takes 1-256 characters"
    longest = text.format(**{name: "X" * 64 for name in own}) if own else text
    return None if _fits_one_message(longest) else "too long for one Telegram message"


def _parse_overrides(
    document: Mapping[str, object],
    feature_keys: Collection[str] = (),
) -> tuple[dict[Language, dict[str, str]], list[str]]:
    overrides: dict[Language, dict[str, str]] = {}
    problems: list[str] = []
    expected_languages = ", ".join(f"[{lang}]" for lang in LANGUAGES)
    for name, table in document.items():
        language = next((lang for lang in LANGUAGES if lang == name), None)
        if language is None:
            if isinstance(table, dict):
                problems.append(f"unknown language [{name}] (expected {expected_languages})")
            else:
                problems.append(f"{name}: texts go under a language table, {expected_languages}")
            continue
        if not isinstance(table, dict):
            problems.append(f"{name}: expected a table [{name}] of texts")
            continue
        overrides[language] = {}
        known = (*TEXT_KEYS, *feature_keys)
        for key, value in table.items():
            if key not in known:
                problems.append(
                    f"[{name}] unknown text {key!r} (expected one of {', '.join(known)})"
                )
            elif not isinstance(value, str) or not value.strip():
                problems.append(f"[{name}] {key}: expected a non-empty string")
            else:
                overrides[language][key] = value.strip()
    return overrides, problems


def read_overrides(
    path: Path, feature_keys: Collection[str] = ()
) -> dict[Language, dict[str, str]]:
    """The overrides in a TOML file (`[ru]`/`[en]` tables of text keys, the features'
    words' keys too), checked for shape.

    Placeholders are checked by `build_text_table`. Problems are one `TextsError` line.
    """
    source = f"TEXTS_FILE {path}"
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_TEXTS_FILE_BYTES + 1)
    except OSError as exc:
        raise TextsError(
            f"{source}: cannot be read: {exc.strerror or type(exc).__name__}"
        ) from None
    if len(raw) > MAX_TEXTS_FILE_BYTES:
        raise TextsError(f"{source}: larger than {MAX_TEXTS_FILE_BYTES // 1024} KB")
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TextsError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TextsError(f"{source}: not valid TOML: {exc}") from None
    overrides, problems = _parse_overrides(document, feature_keys)
    if problems:
        raise TextsError(f"{source}: {'; '.join(problems)}")
    return overrides


def load_text_table(
    *,
    texts_file: Path | None,
    shop_name: str | None,
    default_language: Language,
    features: Mapping[Language, Mapping[str, str]] | None = None,
) -> TextTable:
    """What customers will read: the built-in texts and the features' words
    (`features`: bot/telegram/features/registry.py `FEATURE_WORDS`), `SHOP_NAME` and
    `TEXTS_FILE`."""
    keys = {key for words in (features or {}).values() for key in words}
    overrides = read_overrides(texts_file, keys) if texts_file is not None else {}
    source = f"TEXTS_FILE {texts_file}" if texts_file is not None else "TEXTS_FILE"
    return build_text_table(
        overrides=overrides,
        shop_name=shop_name,
        default_language=default_language,
        source=source,
        features=features,
    )


BUILT_IN = build_text_table()
RU = BUILT_IN.by_language["ru"]
EN = BUILT_IN.by_language["en"]


def describe_table(table: TextTable) -> str:
    """The effective texts as an owner reads them (`python -m bot texts`)."""
    default = table.default_language
    others = " nor ".join(LANGUAGES)
    lines = [
        f"Customers whose Telegram language is neither {others} read the {default} texts.",
        "Texts are shown as written (Markdown: *bold* reaches customers in bold); "
        "{limit} is MAX_INPUT_CHARS (in voice_too_long: VOICE_MAX_SECONDS); "
        "{commands} in help is the list of the commands in the menu; {examples} in start "
        "is what the assistant can do and example questions, made from the shop's data "
        "at each /start.",
    ]
    order = [default, *(language for language in LANGUAGES if language != default)]
    for language in order:
        texts = table.by_language[language]
        title = f"{language} (default)" if language == default else language
        lines += ["", f"===== {title} ====="]
        shown = {key: str(getattr(texts, key)) for key in TEXT_KEYS} | dict(texts.features)
        for key, text in shown.items():
            origin = "TEXTS_FILE" if key in table.overridden.get(language, ()) else "built-in"
            lines += ["", f"--- {key} ({origin}) ---", text]
    return "\n".join(lines) + "\n"
