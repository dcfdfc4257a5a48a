"""The live-shop settings: SHOP_BACKEND, SHOP_API_URL, SHOP_API_TOKEN, the
cache and timeout bounds, ORDER_NUMBER_*."""

from __future__ import annotations

import pytest

from tests.unit.test_config import error_for, make

TOKEN = "shop-secret-4d1e"


def test_local_is_the_default_and_needs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make(monkeypatch)
    assert settings.shop_backend == "local"
    assert settings.order_number_rule() is None


def test_http_needs_an_https_url_and_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "SHOP_API_URL: required" in error_for(monkeypatch, SHOP_BACKEND="http")
    no_token = error_for(monkeypatch, SHOP_BACKEND="http", SHOP_API_URL="https://shop.example")
    assert "SHOP_API_TOKEN: required" in no_token
    plain = error_for(
        monkeypatch, SHOP_BACKEND="http", SHOP_API_URL="http://shop.example", SHOP_API_TOKEN=TOKEN
    )
    assert "SHOP_API_URL" in plain and "https" in plain and TOKEN not in plain
    query = error_for(monkeypatch, SHOP_API_URL="https://shop.example/api?key=1")
    assert "SHOP_API_URL" in query
    settings = make(
        monkeypatch,
        SHOP_BACKEND="http",
        SHOP_API_URL="http://127.0.0.1:8081/api/",
        SHOP_API_TOKEN=TOKEN,
    )
    assert settings.shop_api_url == "http://127.0.0.1:8081/api"
    assert TOKEN not in repr(settings) and TOKEN not in str(settings.shop_api_token)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SHOP_TIMEOUT_S", "5"),
        ("SHOP_TIMEOUT_S", "0"),
        ("SHOP_CACHE_TTL_S", "-1"),
        ("SHOP_BACKEND", "ftp"),
    ],
)
def test_bounds(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    assert name in error_for(monkeypatch, **{name: value})


def test_order_number_pattern_is_checked_with_its_example(monkeypatch: pytest.MonkeyPatch) -> None:
    rule = make(
        monkeypatch, ORDER_NUMBER_PATTERN="AB-[0-9]{6}", ORDER_NUMBER_EXAMPLE="AB-123456"
    ).order_number_rule()
    assert rule is not None and rule.accepts("AB-000001") and not rule.accepts("123456")
    assert "ORDER_NUMBER_PATTERN" in error_for(
        monkeypatch, ORDER_NUMBER_PATTERN="AB-[0-9", ORDER_NUMBER_EXAMPLE="AB-1"
    )
