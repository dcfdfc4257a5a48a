"""A fake Shopify Admin GraphQL API (version 2026-07) on 127.0.0.1, for the shopify backend.

Built from the documented request/response shapes, not from Shopify's code:
- POST /admin/api/2026-07/graphql.json, header X-Shopify-Access-Token; 401 with
  {"errors": "[API] Invalid API key or access token ..."} for a wrong token;
- orders(query: "name:...") — Shopify's search is fuzzy, so the fake answers every order
  whose name *contains* the digits asked for (as a real search may), newest first;
- customers(query: "phone:...") with their orders;
- orderCancel → {job {id done: false}, orderCancelUserErrors: []}, the order cancelled;
- returnRequest → {return {id status: REQUESTED}, userErrors: []};
- orderUpdate(input: OrderInput) → {order {id}, userErrors: []}: `shippingAddress`
  (MailingAddressInput) overwrites the order's address, `metafields` are added to the
  order's; a fulfilled or cancelled order's address cannot change (a userError);
- productVariants(first: 250, after: $cursor) with shop { currencyCode }: `variants`
  (each a ProductVariant with its `product`), in pages of `variants_page` with
  pageInfo { hasNextPage endCursor } (the cursor: the next index, as an opaque string);
- THROTTLED: {"errors": [{"message": "Throttled", "extensions": {"code": "THROTTLED"}}],
  "extensions": {"cost": {"requestedQueryCost", "actualQueryCost": null, "throttleStatus":
  {"maximumAvailable", "currentlyAvailable", "restoreRate"}}}} with HTTP 200 or 429
  (both are reported; https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits).
- POST /admin/oauth/access_token (the client credentials grant of a Dev Dashboard app,
  https://shopify.dev/docs/apps/build/authentication-authorization/access-tokens/
  client-credentials-grant): form grant_type=client_credentials, client_id,
  client_secret → {"access_token", "scope", "expires_in"}; a wrong client ID or secret
  is 400 {"error": "invalid_client", "error_description"} (RFC 6749, section 5.2). The
  tokens it issued are accepted by the GraphQL endpoint until `expire_tokens()`.
A test scripts failures with `fail_next` and reads `requests` (each call's operation).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

TOKEN = "shpat_test_token"
VERSION = "2026-07"
CLIENT_ID = "a1b2c3d4e5f6client"
CLIENT_SECRET = "shpss_test_client_secret"


@dataclass
class FakeShopify:
    orders: list[dict[str, Any]] = field(default_factory=list)
    customers: list[dict[str, Any]] = field(default_factory=list)
    returns: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    address_updates: int = 0  # orderUpdate calls that changed an address
    requests: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # "401", "throttled200", ...
    url: str = ""
    issued: list[str] = field(default_factory=list)  # tokens from the client credentials grant
    valid_tokens: set[str] = field(default_factory=lambda: {TOKEN})
    token_lifetime_s: int = 86399
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    variants: list[dict[str, Any]] = field(default_factory=list)
    variants_page: int = 250
    currency: str = "RUB"

    def expire_tokens(self) -> None:
        """Every token the grant issued stops working (its 24 hours are over)."""
        self.valid_tokens -= set(self.issued)

    async def grant(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        self.requests.append("access_token")
        if form.get("grant_type") != "client_credentials":
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return web.json_response(
                {"error": "invalid_client", "error_description": "Client authentication failed"},
                status=400,
            )
        token = f"shpat_issued_{len(self.issued) + 1}"
        self.issued.append(token)
        self.valid_tokens.add(token)
        return web.json_response(
            {
                "access_token": token,
                "scope": "read_orders,read_customers",
                "expires_in": self.token_lifetime_s,
            }
        )

    def fail_next(self, *kinds: str) -> None:
        """The next requests answer with these failures, in order: "401", "500",
        "throttled200", "throttled429", "throttled_long", "slow", "not_json"."""
        self.failures.extend(kinds)

    def add_order(
        self,
        number: int,
        *,
        phone: str | None = "+79123456789",
        fulfillment: str | None = None,
        cancelled: bool = False,
        tracking: str | None = None,
    ) -> dict[str, Any]:
        gid = f"gid://shopify/Order/{number}0000"
        order: dict[str, Any] = {
            "id": gid,
            "name": f"#{number}",
            "updatedAt": f"2026-11-{10 + len(self.orders):02d}T10:00:00Z",
            "cancelledAt": "2026-11-20T10:00:00Z" if cancelled else None,
            "displayFulfillmentStatus": "FULFILLED" if fulfillment else "UNFULFILLED",
            "email": "anna@example.com",
            "phone": None,
            "customer": {"phone": phone, "email": "anna@example.com"},
            "lineItems": {
                "nodes": [{"id": f"gid://shopify/LineItem/{number}1", "name": "Mug", "quantity": 2}]
            },
            "fulfillments": [],
            "totalPriceSet": {"shopMoney": {"amount": "1990.00", "currencyCode": "RUB"}},
            "shippingAddress": {
                "firstName": "Anna",
                "lastName": "Petrova",
                "address1": "Tverskaya 1",
                "city": "Moscow",
                "zip": "125009",
                "countryCodeV2": "RU",
            },
            "metafields": {},
        }
        if fulfillment:
            order["fulfillments"].append(
                {
                    "displayStatus": fulfillment,
                    "deliveredAt": "2026-11-21T10:00:00Z" if fulfillment == "DELIVERED" else None,
                    "estimatedDeliveryAt": "2026-11-25T10:00:00Z",
                    "trackingInfo": [
                        {
                            "company": "CDEK",
                            "number": tracking or "TRK1",
                            "url": "https://t.example/1",
                        }
                    ],
                }
            )
        self.orders.append(order)
        return order

    def by_id(self, gid: str) -> dict[str, Any] | None:
        return next((o for o in self.orders if o["id"] == gid), None)

    # --- the server --------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        query = str(body.get("query", ""))
        variables = body.get("variables") or {}
        operation = _operation(query)
        self.requests.append(operation)
        if request.headers.get("X-Shopify-Access-Token") not in self.valid_tokens:
            return web.json_response(
                {"errors": "[API] Invalid API key or access token"},
                status=401,
            )
        if self.failures:
            failure = self.failures.pop(0)
            answer = await self._failure(failure)
            if answer is not None:
                return answer
        return web.json_response(
            {"data": self._data(operation, variables), "extensions": _cost(10, 990)}
        )

    async def _failure(self, kind: str) -> web.StreamResponse | None:
        if kind == "401":
            return web.json_response(
                {"errors": "[API] Invalid API key or access token"}, status=401
            )
        if kind == "500":
            return web.json_response({"errors": "Internal error"}, status=500)
        if kind in ("throttled200", "throttled429", "throttled_long"):
            available = 0 if kind == "throttled_long" else 990
            rate = 1 if kind == "throttled_long" else 100
            answer = {
                "errors": [{"message": "Throttled", "extensions": {"code": "THROTTLED"}}],
                "extensions": {
                    "cost": {
                        "requestedQueryCost": 1000,
                        "actualQueryCost": None,
                        "throttleStatus": {
                            "maximumAvailable": 2000.0,
                            "currentlyAvailable": available,
                            "restoreRate": rate,
                        },
                    }
                },
            }
            return web.json_response(answer, status=429 if kind == "throttled429" else 200)
        if kind == "slow":
            await asyncio.sleep(30)  # longer than the backend's deadline: it times out
            return web.json_response({})
        if kind == "not_json":
            return web.Response(text="<html>maintenance</html>", content_type="text/html")
        return None

    def _data(self, operation: str, variables: dict[str, Any]) -> dict[str, Any]:
        handler = getattr(self, f"_op_{operation}", None)
        if handler is None:
            raise AssertionError(f"the fake does not know {operation}")
        answer: dict[str, Any] = handler(variables)
        return answer

    def _op_ProductVariants(self, variables: dict[str, Any]) -> dict[str, Any]:
        start = int(variables.get("cursor") or 0)
        end = start + self.variants_page
        more = end < len(self.variants)
        return {
            "shop": {"currencyCode": self.currency},
            "productVariants": {
                "pageInfo": {"hasNextPage": more, "endCursor": str(end) if more else None},
                "nodes": self.variants[start:end],
            },
        }

    def _op_OrdersByName(self, variables: dict[str, Any]) -> dict[str, Any]:
        digits = re.sub(r"\D", "", str(variables["query"]))
        hits = [o for o in self.orders if digits and digits[:1] in o["name"]]
        return {"orders": {"nodes": list(reversed(hits))[:5]}}

    def _op_CustomersByPhone(self, variables: dict[str, Any]) -> dict[str, Any]:
        phone = str(variables["query"]).removeprefix("phone:").strip('"')
        digits = re.sub(r"\D", "", phone)[-10:]
        customers = []
        for person in {o["customer"]["phone"] for o in self.orders if o["customer"]["phone"]}:
            if digits in re.sub(r"\D", "", person):
                mine = [o for o in self.orders if o["customer"]["phone"] == person]
                mine.sort(key=lambda o: o["updatedAt"], reverse=True)
                customers.append({"phone": person, "orders": {"nodes": mine[:10]}})
        return {"customers": {"nodes": customers[:3]}}

    def _op_OrderState(self, variables: dict[str, Any]) -> dict[str, Any]:
        order = self.by_id(variables["id"])
        return {
            "order": order
            and {k: order[k] for k in ("id", "cancelledAt", "displayFulfillmentStatus")}
        }

    def _op_Cancel(self, variables: dict[str, Any]) -> dict[str, Any]:
        order = self.by_id(variables["orderId"])
        if order is None or order["cancelledAt"]:
            errors = [
                {
                    "field": ["orderId"],
                    "message": "Order cannot be cancelled.",
                    "code": "INVALID",
                }
            ]
            return {"orderCancel": {"job": None, "orderCancelUserErrors": errors}}
        order["cancelledAt"] = "2026-12-02T05:00:00Z"
        order["staffNote"] = variables.get("staffNote")
        return {
            "orderCancel": {
                "job": {"id": f"gid://shopify/Job/{next(self._ids)}", "done": False},
                "orderCancelUserErrors": [],
            }
        }

    def _op_AddressState(self, variables: dict[str, Any]) -> dict[str, Any]:
        order = self.by_id(variables["id"])
        if order is None:
            return {"order": None}
        value = order["metafields"].get("support_bot.address_operation")
        return {
            "order": {
                **{k: order[k] for k in ("id", "cancelledAt", "displayFulfillmentStatus")},
                "shippingAddress": order["shippingAddress"],
                "metafield": None if value is None else {"value": value},
            }
        }

    def _op_AddressUpdate(self, variables: dict[str, Any]) -> dict[str, Any]:
        data = variables["input"]
        order = self.by_id(data["id"])
        if (
            order is None
            or order["cancelledAt"]
            or order["displayFulfillmentStatus"] != "UNFULFILLED"
        ):
            errors = [
                {"field": ["shippingAddress"], "message": "Shipping address cannot be changed"}
            ]
            return {"orderUpdate": {"order": None, "userErrors": errors}}
        self.address_updates += 1
        order["shippingAddress"] = dict(data["shippingAddress"])  # overwrites the whole address
        for metafield in data.get("metafields") or []:
            key = f"{metafield['namespace']}.{metafield['key']}"
            order["metafields"][key] = metafield["value"]
        return {"orderUpdate": {"order": {"id": order["id"]}, "userErrors": []}}

    def _op_Returns(self, variables: dict[str, Any]) -> dict[str, Any]:
        made = self.returns.get(variables["id"], [])
        return {"order": {"returns": {"nodes": made}}}

    def _op_Returnable(self, variables: dict[str, Any]) -> dict[str, Any]:
        order = self.by_id(variables["id"])
        nodes = []
        if order and order["fulfillments"]:
            nodes = [
                {
                    "returnableFulfillmentLineItems": {
                        "nodes": [
                            {
                                "quantity": line["quantity"],
                                "fulfillmentLineItem": {
                                    "id": line["id"].replace("LineItem", "FulfillmentLineItem"),
                                    "lineItem": {"id": line["id"]},
                                },
                            }
                            for line in order["lineItems"]["nodes"]
                        ]
                    }
                }
            ]
        return {"returnableFulfillments": {"nodes": nodes}}

    def _op_ReturnRequest(self, variables: dict[str, Any]) -> dict[str, Any]:
        data = variables["input"]
        made = {
            "id": f"gid://shopify/Return/{next(self._ids)}",
            "status": "REQUESTED",
            "returnLineItems": {
                "nodes": [{"customerNote": i["customerNote"]} for i in data["returnLineItems"]]
            },
        }
        self.returns.setdefault(data["orderId"], []).append(made)
        return {
            "returnRequest": {
                "return": {"id": made["id"], "status": "REQUESTED"},
                "userErrors": [],
            }
        }

    def _op_shop(self, variables: dict[str, Any]) -> dict[str, Any]:
        return {"shop": {"name": "Test store"}}


def _operation(query: str) -> str:
    found = re.match(r"\s*(?:query|mutation)\s+(\w+)", query)
    return found.group(1) if found else "shop"


def _cost(requested: int, available: int) -> dict[str, Any]:
    return {
        "cost": {
            "requestedQueryCost": requested,
            "actualQueryCost": requested,
            "throttleStatus": {
                "maximumAvailable": 2000.0,
                "currentlyAvailable": available,
                "restoreRate": 100.0,
            },
        }
    }


@pytest.fixture
async def fake_shopify() -> AsyncIterator[FakeShopify]:
    fake = FakeShopify()
    app = web.Application()
    app.router.add_post(f"/admin/api/{VERSION}/graphql.json", fake.handle)
    app.router.add_post("/admin/oauth/access_token", fake.grant)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    fake.url = str(server.make_url("")).rstrip("/")
    try:
        yield fake
    finally:
        await server.close()
