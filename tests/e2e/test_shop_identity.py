"""The shop's identity and words through the real process.

SHOP_NAME reaches the welcome and the system instruction; a TEXTS_FILE replaces fixed
texts, and a bad one stops the start with one line and status 2; DEFAULT_LANGUAGE is
what a customer whose Telegram language is neither Russian nor English reads; the
welcome says the assistant is an AI; `python -m bot texts` shows what customers read
without a token; the demo orders read like real ones.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bot.telegram.formatting import markdown_to_messages
from bot.telegram.menu import help_with_commands
from bot.telegram.routers import get_menu
from bot.telegram.texts import BUILT_IN, EN, RU, Texts
from bot.telegram.welcome import welcome_examples
from tests.e2e.chat_helpers import results_for, system_text
from tests.e2e.conftest import StartBot
from tests.e2e.launch import run_bot_command
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegramServer, message_update
from tools.shop.examples import ShopExamples

CHAT = 4101


def html_of(markdown: str) -> str:
    """What the bot sends for one of its fixed texts (Telegram HTML)."""
    [rendered] = markdown_to_messages(markdown)
    return rendered.html


def run_cli(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_bot_command(list(args), env=env, cwd=cwd)


@pytest.mark.parametrize(("default", "texts"), [("en", EN), ("ru", RU)])
async def test_a_german_customer_reads_the_default_language_and_the_model_answers_in_german(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    default: str,
    texts: Texts,
) -> None:
    await start_bot(DEFAULT_LANGUAGE=default)
    for text in ("/start", "/help", "/nonsense"):
        fake_telegram.enqueue_update(message_update(CHAT, text=text, language_code="de"))
    fake_telegram.enqueue_update(message_update(CHAT, text="Hallo", language_code="uk"))
    start, help_, unknown, answer = await fake_telegram.wait_for_messages(CHAT, 4)
    # the demo shop's examples (bot/telegram/welcome.py): its first product, its delivery and
    # payment
    examples = ShopExamples("Клавиатура", "keyboard", delivery=True, payment=True)
    assert start.text == html_of(texts.start_with(welcome_examples(default, examples)))
    # /help with the customers' menu in it (no feature that adds a command is on here)
    menu = help_with_commands(BUILT_IN, get_menu().customers)
    assert help_.text == html_of(menu.by_language[default].help)  # type: ignore[index]
    assert unknown.text == html_of(texts.unknown_command)
    # the welcome says plainly that this is an AI, and how to reach the shop otherwise
    assert ("AI assistant" if default == "en" else "ИИ-ассистент") in start.plain_text
    assert texts.contacts in start.plain_text
    # the model, not the fixed texts, follows the customer's own language
    [request] = fake_openai.chat_requests
    assert "whatever\n  language" in system_text(request)
    assert answer.plain_text == "Hello! How can I help you?"


async def test_an_override_file_and_shop_name_change_the_welcome_and_the_instruction(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    fake_openai: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    texts_file = tmp_path / "texts.toml"
    texts_file.write_text(
        '[ru]\nstart = """Здравствуйте! Я — ИИ-помощник «{shop_name}».\n\n{contacts}"""\n'
        'contacts = "Позвонить нам: +7 495 000-00-00 (10:00–20:00)."\n',
        encoding="utf-8",
    )
    await start_bot(SHOP_NAME="Кофейный двор", TEXTS_FILE=str(texts_file))
    fake_telegram.enqueue_update(message_update(CHAT, text="/start", language_code="ru"))
    fake_telegram.enqueue_update(message_update(CHAT, text="/start", language_code="en"))
    fake_telegram.enqueue_update(message_update(CHAT, text="Добрый день", language_code="ru"))
    ru_start, en_start, _answer = await fake_telegram.wait_for_messages(CHAT, 3)
    assert ru_start.plain_text == (
        "Здравствуйте! Я — ИИ-помощник «Кофейный двор».\n\n"
        "Позвонить нам: +7 495 000-00-00 (10:00–20:00)."
    )
    # English is not overridden: the built-in welcome, with the shop's name
    assert en_start.plain_text.startswith(
        "Hello! This is the support of Кофейный двор. I am an AI assistant"
    )
    assert "To talk to a person at the shop" in en_start.plain_text
    [request] = fake_openai.chat_requests
    assert 'the online shop "Кофейный двор"' in system_text(request)


async def test_without_shop_name_the_instruction_keeps_online_shop(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot()
    fake_telegram.enqueue_update(message_update(CHAT, text="Добрый день"))
    await fake_telegram.wait_for_messages(CHAT, 1)
    [request] = fake_openai.chat_requests
    assert 'the online shop "Online shop"' in system_text(request)


def test_a_bad_override_file_stops_the_start_with_one_line_and_status_2(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    texts_file = tmp_path / "texts.toml"
    texts_file.write_text('[en]\nstart = "Hi!"\ntoo_long = "Too long."\n', encoding="utf-8")
    database = tmp_path / "data" / "bot.sqlite3"
    env = {
        **clean_env,
        "BOT_TOKEN": "123456:secret-token-value",
        "OPENAI_API_KEY": "sk-secret-key-value",
        "TELEGRAM_API_URL": "http://127.0.0.1:9",  # never reached
        "DATABASE_PATH": str(database),
        "TEXTS_FILE": str(texts_file),
    }
    result = run_cli(env, tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: invalid settings: TEXTS_FILE {texts_file}: [en] start: must contain the "
        "placeholder {contacts}; [en] too_long: must contain the placeholder {limit}"
    ], result.stderr
    assert "secret" not in result.stderr + result.stdout
    assert not database.exists()  # nothing was started


def test_texts_prints_the_effective_texts_without_a_token(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "texts.toml").write_text(
        '[en]\ncontacts = "Write to help@shop.example or call +1 555 0100."\n', encoding="utf-8"
    )
    # settings from .env, as an owner has them; no BOT_TOKEN or OPENAI_API_KEY anywhere
    (tmp_path / ".env").write_text(
        "SHOP_NAME=Кофейный двор\nTEXTS_FILE=texts.toml\nDEFAULT_LANGUAGE=en\n", encoding="utf-8"
    )
    result = run_cli(clean_env, tmp_path, "texts")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = result.stdout
    assert "neither ru nor en read the en texts" in out
    assert "===== en (default) =====" in out and "===== ru =====" in out
    assert "--- contacts (TEXTS_FILE) ---\nWrite to help@shop.example or call +1 555 0100." in out
    en_start = out.split("--- start (built-in) ---\n")[1]
    assert en_start.startswith("Hello! This is the support of Кофейный двор.")
    assert "Write to help@shop.example" in en_start.split("\n---")[0]
    assert "Здравствуйте! Это поддержка магазина «Кофейный двор»." in out

    (tmp_path / "texts.toml").write_text('[en]\nhelp = "Ask {manager}"\n', encoding="utf-8")
    bad = run_cli(clean_env, tmp_path, "texts")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.splitlines() == [
        "error: invalid settings: TEXTS_FILE texts.toml: [en] help: unknown placeholder "
        "{manager} (allowed here: {commands}, {contacts}, {shop_name})"
    ]
    bad_language = run_cli({**clean_env, "DEFAULT_LANGUAGE": "de"}, tmp_path, "texts")
    assert bad_language.returncode == 2
    assert len(bad_language.stderr.splitlines()) == 1
    assert "DEFAULT_LANGUAGE" in bad_language.stderr


async def test_a_demo_order_answer_carries_dates_and_a_pickup_point(
    start_bot: StartBot, fake_telegram: FakeTelegramServer, fake_openai: FakeOpenAIServer
) -> None:
    await start_bot()
    question = "Где сейчас находится заказ 8041?"
    fake_telegram.enqueue_update(message_update(CHAT, text=question))
    await fake_telegram.wait_for_messages(CHAT, 1)
    [result] = results_for(fake_openai, question)
    data = result["data"]
    assert data["status"] == "in_transit"
    assert data["updated_at"] and data["expected_date"] and data["pickup_point"]
    assert json.dumps(data, ensure_ascii=False).count("null") == 0


async def test_after_an_import_the_welcome_speaks_of_the_imported_shop(
    start_bot: StartBot,
    fake_telegram: FakeTelegramServer,
    bot_base_env: dict[str, str],
    tmp_path: Path,
) -> None:
    """The owner's path: the bot runs on the demo, `import-data` loads a tea shop into the
    same database while it runs, and the next /start names the tea, not the demo's goods,
    and offers the delivery and payment questions the tea shop's FAQ answers."""
    await start_bot()
    fake_telegram.enqueue_update(message_update(CHAT, text="/start", language_code="ru"))
    [demo] = await fake_telegram.wait_for_messages(CHAT, 1)
    assert "«Клавиатура»" in demo.plain_text
    shop = tmp_path / "tea.json"
    shop.write_text(
        json.dumps(
            {
                "return_policies": [
                    {"product": "Пуэр Шу", "return_days": 14, "conditions": "Не вскрыт."}
                ],
                "faq": [
                    {"topic": "Доставка", "answer": "Почтой, 3–7 дней."},
                    {"topic": "Оплата", "answer": "Картой или СБП."},
                ],
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    imported = run_cli(bot_base_env, tmp_path, "import-data", str(shop))
    assert imported.returncode == 0, imported.stderr
    fake_telegram.enqueue_update(message_update(CHAT, text="/start", language_code="ru"))
    _demo, tea = await fake_telegram.wait_for_messages(CHAT, 2)
    text = tea.plain_text
    assert "Можно ли вернуть «Пуэр Шу»?" in text
    assert "Сколько стоит доставка?" in text and "Как можно оплатить заказ?" in text
    for demo_goods in ("Клавиатура", "Кофемашина", "Наушники", "наушники"):
        assert demo_goods not in text
