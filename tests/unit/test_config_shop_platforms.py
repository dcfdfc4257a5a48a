"""SHOP_BACKEND=medusa | shopify | woocommerce: the settings each needs, named in one line
when missing; the backend the wiring builds from them; secrets never echoed."""

from __future__ import annotations

import pytest

from bot.runtime.config import SettingsError, load_settings
from bot.telegram.wiring.core import build_shop_directory
from tools.shop.backends.medusa import MedusaBackend
from tools.shop.backends.shopify import SHOPIFY_API_VERSION, ShopifyBackend
from tools.shop.backends.shopify_token import ClientCredentials
from tools.shop.backends.woocommerce import WooCommerceBackend
from tools.shop.rules import OrderStatus

BASE = {"BOT_TOKEN": "1:secret-token", "OPENAI_API_KEY": "sk-secret-key"}


def make(monkeypatch: pytest.MonkeyPatch, **env: str):
    for key, value in {**BASE, **env}.items():
        monkeypatch.setenv(key, value)
    return load_settings()


def error_for(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    with pytest.raises(SettingsError) as info:
        make(monkeypatch, **env)
    return str(info.value)


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({"SHOP_BACKEND": "medusa"}, "SHOP_API_URL: required when SHOP_BACKEND=medusa"),
        (
            {"SHOP_BACKEND": "shopify", "SHOP_API_TOKEN": "shpat_x"},
            "SHOPIFY_SHOP: required when SHOP_BACKEND=shopify",
        ),
        (
            {
                "SHOP_BACKEND": "woocommerce",
                "SHOP_API_URL": "https://shop.example",
                "SHOP_API_TOKEN": "ck_x",
            },
            "SHOP_API_SECRET: required when SHOP_BACKEND=woocommerce",
        ),
    ],
)
def test_each_platform_names_what_it_needs(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], missing: str
) -> None:
    assert missing in error_for(monkeypatch, **env)


def test_bad_platform_values(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "myshopify.com" in error_for(monkeypatch, SHOPIFY_SHOP="shop.example.com")
    assert "SHOPIFY_API_VERSION" in error_for(monkeypatch, SHOPIFY_API_VERSION="2026-13")
    message = error_for(monkeypatch, WOOCOMMERCE_STATUS_MAP="shipped:sent")
    assert "WOOCOMMERCE_STATUS_MAP" in message and "in_transit" in message


async def test_the_wiring_builds_the_configured_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    medusa = make(
        monkeypatch,
        SHOP_BACKEND="medusa",
        SHOP_API_URL="https://medusa.example",
        SHOP_API_TOKEN="sk_secret_medusa",
        SHOP_CACHE_TTL_S="7",
    )
    assert "sk_secret_medusa" not in repr(medusa)
    directory = build_shop_directory(medusa, db=None)  # type: ignore[arg-type]
    assert isinstance(directory.backend, MedusaBackend)
    assert directory.number_rule.normalise("#1001") == "1001"
    await directory.aclose()

    shopify = make(
        monkeypatch,
        SHOP_BACKEND="shopify",
        SHOPIFY_SHOP="https://My-Shop.myshopify.com/",
        SHOP_API_TOKEN="shpat_x",
    )
    assert shopify.shopify_shop == "my-shop.myshopify.com"
    assert shopify.shopify_api_version == SHOPIFY_API_VERSION == "2026-07"
    directory = build_shop_directory(shopify, db=None)  # type: ignore[arg-type]
    assert isinstance(directory.backend, ShopifyBackend)
    await directory.aclose()

    woo = make(
        monkeypatch,
        SHOP_BACKEND="woocommerce",
        SHOP_API_URL="https://shop.example",
        SHOP_API_TOKEN="ck_x",
        SHOP_API_SECRET="cs_secret_woo",
        WOOCOMMERCE_STATUS_MAP="shipped:in_transit, ready-pickup:ready_for_pickup",
    )
    assert "cs_secret_woo" not in repr(woo)
    directory = build_shop_directory(woo, db=None)  # type: ignore[arg-type]
    assert isinstance(directory.backend, WooCommerceBackend)
    assert directory.backend.map_status("shipped") == OrderStatus.IN_TRANSIT
    assert directory.backend.map_status("ready-pickup") == OrderStatus.READY_FOR_PICKUP
    await directory.aclose()


SHOPIFY = {"SHOP_BACKEND": "shopify", "SHOPIFY_SHOP": "my-shop.myshopify.com"}


@pytest.mark.parametrize(
    ("env", "line"),
    [
        ({}, "SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET: required when SHOP_BACKEND=shopify"),
        ({"SHOPIFY_CLIENT_ID": "abc"}, "SHOPIFY_CLIENT_SECRET: required with SHOPIFY_CLIENT_ID"),
        (
            {"SHOPIFY_CLIENT_SECRET": "shpss_secret"},
            "SHOPIFY_CLIENT_ID: required with SHOPIFY_CLIENT_SECRET",
        ),
        (
            {
                "SHOPIFY_CLIENT_ID": "abc",
                "SHOPIFY_CLIENT_SECRET": "shpss_secret",
                "SHOP_API_TOKEN": "shpat_x",
            },
            "SHOP_API_TOKEN: set either it or SHOPIFY_CLIENT_ID and SHOPIFY_CLIENT_SECRET",
        ),
    ],
)
def test_shopify_needs_the_apps_client_credentials_or_a_fixed_token(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], line: str
) -> None:
    message = error_for(monkeypatch, **SHOPIFY, **env)
    assert line in message and "shpss_secret" not in message


async def test_a_dev_dashboard_app_is_wired_with_its_client_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = make(
        monkeypatch, **SHOPIFY, SHOPIFY_CLIENT_ID="abc", SHOPIFY_CLIENT_SECRET="shpss_secret"
    )
    assert "shpss_secret" not in repr(settings)
    directory = build_shop_directory(settings, db=None)  # type: ignore[arg-type]
    backend = directory.backend
    assert isinstance(backend, ShopifyBackend)
    assert isinstance(backend._tokens, ClientCredentials)
    await directory.aclose()
