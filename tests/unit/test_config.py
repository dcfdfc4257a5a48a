"""Settings: every rule of the foundation issue, and that secrets are never echoed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.runtime.config import (
    BotMode,
    SettingsError,
    load_feature_settings,
    load_settings,
    load_shop_settings,
)
from bot.telegram.features.actions import ActionsSettings
from bot.telegram.features.handoff import HandoffSettings
from bot.telegram.features.order_updates import OrderUpdatesSettings

BASE = {"BOT_TOKEN": "1:secret-token", "OPENAI_API_KEY": "sk-secret-key"}


def make(monkeypatch: pytest.MonkeyPatch, **env: str):
    for key, value in {**BASE, **env}.items():
        monkeypatch.setenv(key, value)
    return load_settings()


def error_for(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    with pytest.raises(SettingsError) as info:
        make(monkeypatch, **env)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch)
    assert settings.bot_mode is BotMode.POLLING
    assert settings.tool_max_steps == 3
    assert settings.database_path == Path("data/bot.sqlite3")
    assert settings.admin_ids == frozenset()
    assert settings.telegram_api_url is None and settings.openai_base_url is None
    assert settings.max_input_chars == 2000
    assert settings.order_lookups_per_hour == 10
    assert settings.turn_timeout_s == 60


def test_secrets_are_hidden_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch)
    assert "secret-token" not in repr(settings)
    assert "sk-secret-key" not in str(settings)
    assert settings.bot_token.get_secret_value() == "1:secret-token"


def test_missing_token_and_key_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert "BOT_TOKEN" in str(info.value)
    assert "OPENAI_API_KEY" in str(info.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("123,456", {123, 456}), (" 123 , 456 ", {123, 456}), ("", set()), ("42", {42})],
)
def test_admin_ids(monkeypatch: pytest.MonkeyPatch, raw: str, expected: set[int]) -> None:
    assert make(monkeypatch, ADMIN_IDS=raw).admin_ids == frozenset(expected)


def test_admin_ids_rejects_words(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "ADMIN_IDS" in error_for(monkeypatch, ADMIN_IDS="123,bob")


def test_fallback_models_list(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch, OPENAI_FALLBACK_MODELS="a-model, b-model")
    assert settings.openai_fallback_models == ("a-model", "b-model")


def test_bot_mode_must_be_known(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "BOT_MODE" in error_for(monkeypatch, BOT_MODE="carrier-pigeon")


def test_webhook_mode_requires_url(monkeypatch: pytest.MonkeyPatch) -> None:
    message = error_for(monkeypatch, BOT_MODE="webhook", WEBHOOK_SECRET="abc")
    assert "WEBHOOK_URL" in message


def test_webhook_url_must_be_https(monkeypatch: pytest.MonkeyPatch) -> None:
    message = error_for(
        monkeypatch, BOT_MODE="webhook", WEBHOOK_URL="http://example.org", WEBHOOK_SECRET="abc"
    )
    assert "WEBHOOK_URL" in message and "https" in message


def test_webhook_mode_requires_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    message = error_for(monkeypatch, BOT_MODE="webhook", WEBHOOK_URL="https://example.org")
    assert "WEBHOOK_SECRET" in message


@pytest.mark.parametrize("secret", ["has space", "x" * 257, "semi;colon", "ключ"])
def test_webhook_secret_charset_and_length(monkeypatch: pytest.MonkeyPatch, secret: str) -> None:
    message = error_for(
        monkeypatch, BOT_MODE="webhook", WEBHOOK_URL="https://example.org", WEBHOOK_SECRET=secret
    )
    assert "WEBHOOK_SECRET" in message
    assert secret not in message


def test_valid_webhook(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(
        monkeypatch,
        BOT_MODE="webhook",
        WEBHOOK_URL="https://bot.example.org/",
        WEBHOOK_SECRET="A-z_09" * 10,
    )
    assert settings.bot_mode is BotMode.WEBHOOK
    assert settings.webhook_full_url == "https://bot.example.org/telegram/webhook"
    assert settings.webhook_max_connections == 100


@pytest.mark.parametrize("value", ["0", "101", "many"])
def test_webhook_max_connections_is_telegrams_range(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    assert "WEBHOOK_MAX_CONNECTIONS" in error_for(monkeypatch, WEBHOOK_MAX_CONNECTIONS=value)
    assert make(monkeypatch, WEBHOOK_MAX_CONNECTIONS="40").webhook_max_connections == 40


@pytest.mark.parametrize("steps", ["0", "6", "three"])
def test_tool_max_steps_range(monkeypatch: pytest.MonkeyPatch, steps: str) -> None:
    assert "TOOL_MAX_STEPS" in error_for(monkeypatch, TOOL_MAX_STEPS=steps)


@pytest.mark.parametrize("steps", ["1", "5"])
def test_tool_max_steps_bounds_accepted(monkeypatch: pytest.MonkeyPatch, steps: str) -> None:
    assert make(monkeypatch, TOOL_MAX_STEPS=steps).tool_max_steps == int(steps)


@pytest.mark.parametrize("name", ["TELEGRAM_API_URL", "OPENAI_BASE_URL"])
def test_optional_urls(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    assert name in error_for(monkeypatch, **{name: "not a url"})
    settings = make(monkeypatch, **{name: "http://127.0.0.1:8081/"})
    assert getattr(settings, name.lower()) == "http://127.0.0.1:8081"


def test_reads_dotenv_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("BOT_TOKEN=1:from-file\nOPENAI_API_KEY=k\nADMIN_IDS=7\n")
    settings = load_settings()
    assert settings.bot_token.get_secret_value() == "1:from-file"
    assert settings.admin_ids == frozenset({7})


# --- placeholders and the token's shape ---


@pytest.mark.parametrize(
    "token",
    [
        "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",  # the shape @BotFather gives
        "123456:TEST-TOKEN",  # the fakes' and the bench's
        "1:secret-token",
        "7000000001:AA_under-score_and-dash_0123456789abc",
    ],
)
def test_well_formed_tokens_are_accepted(monkeypatch: pytest.MonkeyPatch, token: str) -> None:
    assert make(monkeypatch, BOT_TOKEN=token).bot_token.get_secret_value() == token


@pytest.mark.parametrize(
    "token",
    [
        "qwertyuiop",
        ":qwertyuiop",
        "123:",
        "12a:qwertyuiop",
        "123:qwerty uiop",
        "123:qwerty/uiop",
        "1:qwértyuiop",
    ],
)
def test_malformed_tokens_are_refused_without_echo(
    monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    message = error_for(monkeypatch, BOT_TOKEN=token)
    assert message == (
        "invalid settings: BOT_TOKEN: not a bot token: expected the bot's id, a colon and "
        "the secret as @BotFather gives it (digits:letters, digits, _ or -, no spaces)"
    )
    assert "qwert" not in message and "uiop" not in message


def test_placeholders_from_env_example_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    message = error_for(
        monkeypatch,
        BOT_TOKEN="123456789:replace-with-your-bot-token",
        OPENAI_API_KEY="sk-replace-with-your-key",
    )
    assert "BOT_TOKEN: still the placeholder from .env.example" in message
    assert "OPENAI_API_KEY: still the placeholder from .env.example" in message
    assert "replace-with-your" not in message
    assert "cp .env.example" not in message  # they are set, just not filled in


def test_both_required_values_missing_suggests_the_example(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BOT_TOKEN", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert str(info.value).endswith(
        "(start from the example: cp .env.example .env, then fill them in)"
    )
    only_one = error_for(monkeypatch, BOT_TOKEN="")
    assert "cp .env.example" not in only_one


def test_the_model_check_is_on_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make(monkeypatch).openai_startup_check is True
    assert make(monkeypatch, OPENAI_STARTUP_CHECK="false").openai_startup_check is False


def test_shop_settings_default_to_no_name_no_file_and_russian(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = make(monkeypatch)
    assert (settings.shop_name, settings.texts_file, settings.default_language) == (
        None,
        None,
        "ru",
    )
    blank = make(monkeypatch, SHOP_NAME="   ", TEXTS_FILE="")
    assert (blank.shop_name, blank.texts_file) == (None, None)
    named = make(
        monkeypatch, SHOP_NAME=" Кофейный двор ", TEXTS_FILE="texts.toml", DEFAULT_LANGUAGE="en"
    )
    assert named.shop_name == "Кофейный двор"
    assert named.texts_file == Path("texts.toml")
    assert named.default_language == "en"


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"DEFAULT_LANGUAGE": "de"}, "DEFAULT_LANGUAGE"),
        ({"SHOP_NAME": "a" * 101}, "SHOP_NAME"),
        ({"SHOP_NAME": "Two\nlines"}, "SHOP_NAME"),
    ],
)
def test_bad_shop_settings_name_the_setting(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], name: str
) -> None:
    assert f"{name}:" in error_for(monkeypatch, **env)


def test_shop_settings_load_without_token_or_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_NAME", "Ромашка")
    shop = load_shop_settings()
    assert shop.shop_name == "Ромашка" and shop.default_language == "ru"
    monkeypatch.setenv("DEFAULT_LANGUAGE", "fr")
    with pytest.raises(SettingsError, match="DEFAULT_LANGUAGE:"):
        load_shop_settings()


def handoff(monkeypatch: pytest.MonkeyPatch, **env: str) -> HandoffSettings:
    """The handoff feature's own group, read by the names owners have always set."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_feature_settings(HandoffSettings)


def test_handoff_is_off_unless_operator_chat_id_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch)
    assert settings.operator_chat_id is None and handoff(monkeypatch).hours is None
    on = make(monkeypatch, OPERATOR_CHAT_ID="-1001234567890")
    assert on.operator_chat_id == -1001234567890
    hours = handoff(monkeypatch, OPERATOR_HOURS=" 09:00-18:00 ").hours
    assert hours is not None and hours.label == "09:00–18:00 (UTC)"


@pytest.mark.parametrize("value", ["1234", "0", "operators"])
def test_operator_chat_id_must_be_a_group_id(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    assert "OPERATOR_CHAT_ID: expected the id of the operators' group" in error_for(
        monkeypatch, OPERATOR_CHAT_ID=value
    )


def test_operator_hours_shape_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError) as info:
        handoff(monkeypatch, OPERATOR_HOURS="9 to 6")
    assert "OPERATOR_HOURS: expected HH:MM-HH:MM" in str(info.value)
    with pytest.raises(SettingsError, match="OPERATOR_UTC_OFFSET"):
        handoff(monkeypatch, OPERATOR_HOURS="", OPERATOR_UTC_OFFSET="15")


def test_actions_and_order_updates_read_the_names_owners_have_always_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Their settings moved into the features' groups; a .env keeps working unchanged."""
    env = {
        "ACTIONS_ENABLED": "cancel_order, change_address,cancel_order",
        "ACTION_CONFIRM_TTL_S": "600",
        "ACTION_RETRY_ATTEMPTS": "3",
        "ACTION_RETRY_FIRST_S": "2.5",
        "ACTION_REQUEST_ESCALATE_S": "7200",
        "ORDER_UPDATES_ENABLED": "true",
        "ORDER_UPDATES_POLL_MINUTES": "5",
        "ORDER_UPDATES_POLL_BUDGET": "10",
        "SHOP_WEBHOOK_SECRET": "generic-secret",
        "SHOPIFY_WEBHOOK_SECRET": "shopify-secret",
        "WOOCOMMERCE_WEBHOOK_SECRET": "woo-secret",
        "SHOP_WEBHOOK_MAX_BYTES": "4096",
        "ORDER_UPDATES_QUIET_HOURS": "22-8",
        "ORDER_UPDATES_UTC_OFFSET": "3",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    make(monkeypatch)  # the rest of the settings do not mind them
    actions = load_feature_settings(ActionsSettings)
    assert actions.actions_enabled == ("cancel_order", "change_address")
    assert (actions.action_confirm_ttl_s, actions.action_retry_attempts) == (600, 3)
    assert (actions.action_retry_first_s, actions.action_request_escalate_s) == (2.5, 7200)
    updates = load_feature_settings(OrderUpdatesSettings)
    assert updates.order_updates_enabled is True
    assert (updates.order_updates_poll_minutes, updates.order_updates_poll_budget) == (5, 10)
    secrets = (
        updates.shop_webhook_secret,
        updates.shopify_webhook_secret,
        updates.woocommerce_webhook_secret,
    )
    assert [s.get_secret_value() for s in secrets if s] == [
        "generic-secret",
        "shopify-secret",
        "woo-secret",
    ]
    assert updates.shop_webhook_max_bytes == 4096
    assert (updates.order_updates_quiet_hours, updates.order_updates_utc_offset) == ("22-8", 3)


def test_an_unknown_action_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACTIONS_ENABLED", "cancel_order,refund")
    with pytest.raises(SettingsError, match="ACTIONS_ENABLED: unknown action 'refund'"):
        load_feature_settings(ActionsSettings)


def test_feedback_and_stats_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = make(monkeypatch)
    assert defaults.feedback_enabled is True and defaults.stats_timezone == "UTC"
    assert defaults.model_price_input_per_1m is None and defaults.model_price_currency == "USD"
    settings = make(
        monkeypatch,
        FEEDBACK_ENABLED="false",
        STATS_TIMEZONE="Europe/Moscow",
        MODEL_PRICE_INPUT_PER_1M="0.15",
        MODEL_PRICE_OUTPUT_PER_1M="0.6",
        MODEL_PRICE_CACHED_INPUT_PER_1M="0.075",
        MODEL_PRICE_CURRENCY="RUB",
    )
    assert settings.feedback_enabled is False and settings.stats_timezone == "Europe/Moscow"
    assert (settings.model_price_input_per_1m, settings.model_price_output_per_1m) == (0.15, 0.6)
    assert settings.model_price_cached_input_per_1m == 0.075
    assert settings.model_price_currency == "RUB"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", ""])
def test_an_unknown_stats_timezone_is_named(monkeypatch: pytest.MonkeyPatch, zone: str) -> None:
    message = error_for(monkeypatch, STATS_TIMEZONE=zone)
    assert "STATS_TIMEZONE" in message and "IANA" in message


def test_a_negative_price_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "MODEL_PRICE_INPUT_PER_1M" in error_for(monkeypatch, MODEL_PRICE_INPUT_PER_1M="-1")


def test_metrics_on_and_text_logs_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch)
    assert settings.metrics_enabled is True and settings.log_format == "text"
    assert make(monkeypatch, LOG_FORMAT=" JSON ").log_format == "json"
    assert make(monkeypatch, METRICS_ENABLED="false").metrics_enabled is False


def test_log_format_must_be_known(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "LOG_FORMAT" in error_for(monkeypatch, LOG_FORMAT="xml")


def test_sampling_and_text_call_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch)
    assert settings.llm_temperature == 0.2 and settings.read_text_tool_calls is True
    assert make(monkeypatch, LLM_TEMPERATURE="").llm_temperature is None  # sends none
    assert make(monkeypatch, LLM_TEMPERATURE="0.7").llm_temperature == 0.7
    assert make(monkeypatch, READ_TEXT_TOOL_CALLS="false").read_text_tool_calls is False
    assert make(monkeypatch, TOOL_GUIDE="true").tool_guide is True
    assert "LLM_TEMPERATURE" in error_for(monkeypatch, LLM_TEMPERATURE="3")
