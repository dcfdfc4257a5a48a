"""The shop's own words: SHOP_NAME, the TEXTS_FILE overrides, and their validation.

Every problem with the file is one `TextsError` line that starts with TEXTS_FILE and
says which language, which text and what is wrong; nothing half-applied is returned.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from bot.runtime.feature_catalog import words_of
from bot.telegram.features.registry import FEATURES
from bot.telegram.formatting import markdown_to_messages
from bot.telegram.texts import (
    EN,
    LANGUAGES,
    RU,
    TEXT_KEYS,
    TextsError,
    build_text_table,
    describe_table,
    load_text_table,
    read_overrides,
)


def _write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "texts.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _load(path: Path, shop_name: str | None = None) -> None:
    """As the bot loads them: the built-in texts and every feature's words."""
    load_text_table(
        texts_file=path, shop_name=shop_name, default_language="ru", features=words_of(FEATURES)
    )


def test_the_welcome_says_it_is_an_ai_and_how_to_reach_the_shop_in_both_languages() -> None:
    assert "ИИ-ассистент" in RU.start and "не человек" in RU.start
    assert "AI assistant" in EN.start and "not a person" in EN.start
    assert RU.contacts in RU.start and EN.contacts in EN.start
    assert RU.contacts in RU.help and EN.contacts in EN.help
    for texts in (RU, EN):
        # {commands} stays: the menu fills it in (bot/telegram/menu.py `help_with_commands`);
        # {examples} too: each /start fills it in from the shop's data (bot/telegram/welcome.py)
        start = texts.start_with("")
        assert "{" not in start + texts.help.replace("{commands}", "") + texts.contacts


def test_the_rate_limit_notice_says_messages_in_the_pause_are_not_answered() -> None:
    assert "ответа не будет" in RU.rate_limited_notice
    assert "will not be answered" in EN.rate_limited_notice
    for texts in (RU, EN):  # the old wording promised an answer that never came
        assert "отвечу, когда" not in texts.rate_limited_notice
        assert "will answer" not in texts.rate_limited_notice


def test_shop_name_is_in_the_welcome_of_both_languages() -> None:
    table = build_text_table(shop_name="Кофейный двор")
    assert "«Кофейный двор»" in table.by_language["ru"].start
    assert "Кофейный двор" in table.by_language["en"].start
    assert "AI assistant" in table.by_language["en"].start
    # a name with braces is a name, not a placeholder
    braces = build_text_table(shop_name="{contacts} & Co")
    assert "{contacts} & Co" in braces.by_language["en"].start


def test_overrides_replace_texts_and_fill_in_placeholders(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[ru]\nstart = """Добро пожаловать в {shop_name}!\n\n{contacts}"""\n'
        'contacts = "Звоните: +7 495 000-00-00, {shop_name}"\n'
        '[en]\ntoo_long = "Up to {limit} characters, please {{really}}."\n',
    )
    table = load_text_table(texts_file=path, shop_name="Ромашка", default_language="en")
    ru, en = table.by_language["ru"], table.by_language["en"]
    assert ru.start == "Добро пожаловать в Ромашка!\n\nЗвоните: +7 495 000-00-00, Ромашка"
    assert ru.help.endswith("Звоните: +7 495 000-00-00, Ромашка")  # {contacts} in help too
    assert en.too_long_for(500) == "Up to 500 characters, please {really}."
    assert en.start.startswith("Hello! This is the support of Ромашка.")  # not overridden
    assert table.overridden == {"ru": {"start", "contacts"}, "en": {"too_long"}}
    assert table.default_language == "en"


def test_an_empty_file_changes_nothing(tmp_path: Path) -> None:
    table = load_text_table(
        texts_file=_write(tmp_path, "# nothing yet\n"), shop_name=None, default_language="ru"
    )
    assert table.by_language == {"ru": RU, "en": EN}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('[de]\nstart = "Hallo {contacts}"\n', "unknown language [de] (expected [ru], [en])"),
        ('start = "Hi {contacts}"\n', "start: texts go under a language table, [ru], [en]"),
        ('[ru]\nwelcome = "Привет"\n', "[ru] unknown text 'welcome' (expected one of start,"),
        ("[en]\nhelp = 5\n", "[en] help: expected a non-empty string"),
        ('[en]\nhelp = "  "\n', "[en] help: expected a non-empty string"),
        (
            '[en]\nstart = "Hello, I am a bot."\n',
            "[en] start: must contain the placeholder {contacts}",
        ),
        (
            '[ru]\ntoo_long = "Слишком длинно."\n',
            "[ru] too_long: must contain the placeholder {limit}",
        ),
        (
            '[en]\nhandoff_off_hours = "We answer later."\n',
            "[en] handoff_off_hours: must contain the placeholder {hours}",
        ),
        (
            '[en]\nhandoff_off_hours = "We answer {hours}, {limit}"\n',
            "[en] handoff_off_hours: unknown placeholder {limit} (allowed here: {hours})",
        ),
        (
            '[en]\nhelp = "Ask {manager}"\n',
            "[en] help: unknown placeholder {manager} "
            "(allowed here: {commands}, {contacts}, {shop_name})",
        ),
        (
            '[en]\ntoo_long = "{limit} at {shop_name}"\n',
            "[en] too_long: unknown placeholder {shop_name} (allowed here: {limit})",
        ),
        ('[en]\ncontacts = "See {contacts}"\n', "[en] contacts: unknown placeholder {contacts}"),
        ('[en]\nhelp = "Call us {"\n', "[en] help: Single '{' encountered in format string"),
        ('[en]\nhelp = "Call {0}"\n', "[en] help: {0} is not a placeholder"),
        ('[en]\nhelp = "Call {contacts!r}"\n', "[en] help: {contacts} is not a placeholder"),
        ('[en]\nhelp = "Welcome to {shop_name}"\n', "uses {shop_name} but SHOP_NAME is not set"),
        ('[en]\nhelp = "x" * 3\n', "not valid TOML: "),
        ('[en]\napology = "' + "long " * 1000 + '"\n', "[en] apology: too long for one Telegram"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_setting_language_and_text(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(TextsError) as caught:
        _load(path)
    message = str(caught.value)
    assert message.startswith(f"TEXTS_FILE {path}: "), message
    assert problem in message
    assert "\n" not in message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path, '[ru]\nstart = "Привет"\n[en]\nhelp = "{x}"\n')
    with pytest.raises(TextsError) as caught:
        _load(path)
    assert "[ru] start:" in str(caught.value) and "[en] help:" in str(caught.value)


def test_a_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TextsError, match=r"^TEXTS_FILE .*missing.toml: cannot be read: "):
        _load(tmp_path / "missing.toml")
    with pytest.raises(TextsError, match=r": not UTF-8 text \(byte 11\)$"):
        _load(_write(tmp_path, b'[ru]\nhelp="\xff"\n'))
    with pytest.raises(TextsError, match=r": larger than 64 KB$"):
        _load(_write(tmp_path, "#" * 70_000))
    with pytest.raises(TextsError, match=r"cannot be read"):
        _load(tmp_path)  # a folder


def test_read_overrides_strips_and_keeps_languages_apart(tmp_path: Path) -> None:
    path = _write(tmp_path, '[ru]\nhelp = "  Помощь {contacts}\\n"\n[en]\n')
    assert read_overrides(path) == {"ru": {"help": "Помощь {contacts}"}, "en": {}}


def test_every_effective_text_is_filled_and_fits_one_message() -> None:
    for shop_name in (None, "Кофейный двор"):
        table = build_text_table(shop_name=shop_name)
        for language in LANGUAGES:
            texts = table.by_language[language]
            assert [f.name for f in fields(texts) if not f.kw_only] == list(TEXT_KEYS)
            for key in TEXT_KEYS:
                text = getattr(texts, key)
                assert text.strip(), (language, key)
                assert len(markdown_to_messages(text)) == 1, (language, key)


def test_the_readme_example_is_a_valid_file(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    [example] = re.findall(r"```toml\n(.*?)```", readme, flags=re.DOTALL)
    path = _write(tmp_path, example)
    table = load_text_table(texts_file=path, shop_name="Кофейный двор", default_language="ru")
    assert table.by_language["ru"].start.startswith("Здравствуйте! Это «Кофейный двор».")
    assert table.by_language["en"].contacts.startswith("Call us:")
    assert table.by_language["en"].contacts in table.by_language["en"].start


def test_describe_table_shows_every_text_its_origin_and_the_default(tmp_path: Path) -> None:
    path = _write(tmp_path, '[en]\nstart = "Hi from {shop_name}! {contacts}"\n')
    table = load_text_table(texts_file=path, shop_name="Ромашка", default_language="en")
    shown = describe_table(table)
    assert "neither ru nor en read the en texts" in shown
    assert "===== en (default) =====" in shown and "===== ru =====" in shown
    assert "--- start (TEXTS_FILE) ---\nHi from Ромашка! To talk to a person" in shown
    assert shown.count("--- start (built-in) ---") == 1
    for key in TEXT_KEYS:
        assert shown.count(f"--- {key} (") == 2
