"""The platform backends SHOP_BACKEND names (medusa, shopify, woocommerce), built from the
settings; the credentials leave their SecretStr only here, into the backend's headers."""

from __future__ import annotations

from bot.runtime.config import Settings, woocommerce_statuses
from tools.shop.backend import ShopBackend
from tools.shop.backends.medusa import MedusaBackend
from tools.shop.backends.shopify import ShopifyBackend
from tools.shop.backends.woocommerce import WooCommerceBackend
from tools.shop.rules import OrderStatus

PLATFORMS = ("medusa", "shopify", "woocommerce")


def build_platform_backend(settings: Settings) -> ShopBackend:
    """The configured platform's backend (the settings' validator made sure its settings
    are there)."""
    token = settings.shop_api_token.get_secret_value() if settings.shop_api_token else ""
    timeout = settings.shop_timeout_s
    if settings.shop_backend == "medusa":
        assert settings.shop_api_url is not None
        return MedusaBackend(
            settings.shop_api_url,
            token,
            timeout_s=timeout,
            product_url=settings.shop_product_url,
        )
    if settings.shop_backend == "shopify":
        assert settings.shopify_shop is not None
        client = settings.shopify_client_id, settings.shopify_client_secret
        return ShopifyBackend(
            settings.shopify_shop,
            token or None,
            client_credentials=(
                (client[0], client[1].get_secret_value())
                if client[0] is not None and client[1] is not None
                else None
            ),
            api_version=settings.shopify_api_version,
            timeout_s=timeout,
        )
    if settings.shop_backend == "woocommerce":
        assert settings.shop_api_url is not None and settings.shop_api_secret is not None
        return WooCommerceBackend(
            settings.shop_api_url,
            token,
            settings.shop_api_secret.get_secret_value(),
            timeout_s=timeout,
            number_is_id=settings.woocommerce_number_is_id,
            status_map={
                theirs: OrderStatus(ours)
                for theirs, ours in woocommerce_statuses(settings.woocommerce_status_map).items()
            },
        )
    raise ValueError(f"not a platform backend: {settings.shop_backend}")
