"""The start-up check of each platform backend against a server that is not that platform
(a website answering HTML, or JSON without orders): one line naming the setting to fix,
never the credential."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tools.shop.backend import ShopBackend, ShopSetupError
from tools.shop.backends.medusa import MedusaBackend
from tools.shop.backends.shopify import ShopifyBackend
from tools.shop.backends.woocommerce import WooCommerceBackend


@pytest.fixture(params=["html", "json"])
async def not_a_shop(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    async def answer(_: web.Request) -> web.Response:
        if request.param == "html":
            return web.Response(text="<html>Welcome</html>", content_type="text/html")
        return web.json_response({"hello": "world"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


def backends(url: str) -> list[tuple[ShopBackend, str]]:
    return [
        (MedusaBackend(url, "sk_secret_1"), "SHOP_API_URL does not look like a Medusa"),
        (
            ShopifyBackend("x.myshopify.com", "shpat_secret_2", base_url=url),
            "SHOPIFY_SHOP does not look like a Shopify",
        ),
        (
            WooCommerceBackend(url, "ck_x", "cs_secret_3"),
            "SHOP_API_URL does not look like a WooCommerce",
        ),
    ]


async def test_a_server_that_is_not_the_platform(not_a_shop: str) -> None:
    for backend, message in backends(not_a_shop):
        try:
            with pytest.raises(ShopSetupError) as error:
                await backend.check()
            assert str(error.value).startswith(message)
            assert "secret" not in str(error.value)
        finally:
            await backend.aclose()
