"""The Admin API access token of a Shopify app: a fixed one, or short-lived ones from the
client credentials grant.

Since 2026-01-01 a store owner can no longer create a custom app in the Shopify admin
(https://help.shopify.com/en/manual/apps/app-types/custom-apps); apps are made in the Dev
Dashboard, and an app installed in its own organisation's store exchanges its client ID
and secret for a token (https://shopify.dev/docs/apps/build/authentication-authorization/
access-tokens/client-credentials-grant):

    POST https://{shop}.myshopify.com/admin/oauth/access_token
    (form) grant_type=client_credentials, client_id, client_secret
    → {"access_token": "shpat_…", "scope": "read_orders,…", "expires_in": 86399}

The token lasts `expires_in` seconds (24 h); a new one is asked for before it runs out,
and again when Shopify answers 401 to it (revoked, or the secret rotated). A wrong client
ID or secret is answered 400/401 with an OAuth error (RFC 6749, section 5.2). The fixed
token of a custom app created before that date still works (`StaticToken`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from tools.shop.backend import ShopUnavailable
from tools.shop.backends.platform_http import PlatformClient

TOKEN_PATH = "/admin/oauth/access_token"
# ask for a new token this long before the current one runs out (at most a tenth of it)
REFRESH_BEFORE_S = 300.0


class TokenSource(Protocol):
    setting: str  # the settings that hold the credentials, for a one-line start-up error

    async def token(self) -> str: ...

    def forget(self, token: str) -> None:
        """The shop refused `token`: the next `token()` asks for a new one (if it can)."""


class StaticToken:
    """A custom app's Admin API access token (created in the admin before 2026)."""

    setting = "SHOP_API_TOKEN"

    def __init__(self, token: str) -> None:
        self._token = token

    async def token(self) -> str:
        return self._token

    def forget(self, token: str) -> None:
        """Nothing to renew: a rejected fixed token stays rejected."""


class ClientCredentials:
    """Short-lived tokens of a Dev Dashboard app (client credentials grant), renewed
    before they run out; one request at a time asks for a new one."""

    setting = "SHOPIFY_CLIENT_ID with SHOPIFY_CLIENT_SECRET"

    def __init__(
        self,
        http: PlatformClient,
        client_id: str,
        client_secret: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._http = http
        self._form = {
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": client_secret,
        }
        self._clock = clock
        self._token: str | None = None
        self._renew_at = 0.0
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        if self._token is not None and self._clock() < self._renew_at:
            return self._token
        async with self._lock:
            if self._token is None or self._clock() >= self._renew_at:
                await self._ask()
            assert self._token is not None
            return self._token

    def forget(self, token: str) -> None:
        if self._token == token:
            self._token = None

    async def _ask(self) -> None:
        asked_at = self._clock()
        reply = await self._http.request("POST", TOKEN_PATH, form=self._form, idempotent=True)
        body = reply.body if isinstance(reply.body, dict) else {}
        if reply.status in (400, 401) and isinstance(body.get("error"), str):
            raise ShopUnavailable("auth", f"shopify token request: {body['error']}")
        token, lifetime = body.get("access_token"), body.get("expires_in")
        if reply.status != 200 or not isinstance(token, str) or not token:
            raise ShopUnavailable("malformed", f"shopify token request answered {reply.status}")
        seconds = float(lifetime) if isinstance(lifetime, int | float) and lifetime > 0 else 3600.0
        self._token = token
        self._renew_at = asked_at + seconds - min(REFRESH_BEFORE_S, seconds / 10)
