"""The medusa backend against the real Medusa v2 engine (tests/shop_engine/medusa_engine.py):
reads by number and by phone, live status changes, a rejected key, and the customer's
cancel, return and change of delivery address carried out exactly once per operation id."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.trickle import trickling
from tests.shop_engine.medusa_engine import MedusaEngine
from tools.shop.backend import (
    ActionDone,
    ActionRejected,
    ReturnLine,
    ShippingAddress,
    ShopSetupError,
    ShopUnavailable,
)
from tools.shop.backends.medusa import ADDRESS_OP_KEY, RETURN_OP_KEY, MedusaBackend

pytestmark = [pytest.mark.medusa, pytest.mark.timeout(900)]

ANNA = "+79123456789"
BORIS = "+79990001122"


@pytest.fixture
async def shop(medusa_engine: MedusaEngine) -> AsyncIterator[MedusaBackend]:
    backend = MedusaBackend(medusa_engine.url, medusa_engine.api_key, timeout_s=30)
    try:
        yield backend
    finally:
        await backend.aclose()


async def test_orders_by_number_in_each_status(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    numbers = medusa_engine.orders
    processing = await shop.get_order(str(numbers["processing"]))
    assert processing is not None
    assert processing.number == str(numbers["processing"])
    assert processing.status == "processing"
    assert processing.customer_phone == ANNA
    assert processing.customer_email == "anna@example.com"
    assert [(i.name, i.quantity) for i in processing.items] == [("USB-C cable", 2)]
    assert processing.total is not None and processing.total.currency == "RUB"
    assert processing.ref is not None and processing.ref.startswith("order_")
    assert processing.public is False

    in_transit = await shop.get_order(str(numbers["in_transit"]))
    assert in_transit is not None and in_transit.status == "in_transit"
    assert in_transit.delivery is not None and in_transit.delivery.tracking_number == "TRK-TRANSIT"

    delivered = await shop.get_order(str(numbers["delivered"]))
    assert delivered is not None and delivered.status == "delivered"
    assert delivered.delivered_at is not None

    cancelled = await shop.get_order(str(numbers["cancelled"]))
    assert cancelled is not None and cancelled.status == "cancelled"


async def test_the_fuzzy_search_never_answers_with_another_order(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    """Medusa's `q=3` also finds #1 (measured): only the exact number comes back."""
    for name, number in medusa_engine.orders.items():
        order = await shop.get_order(shop.number_rule.normalise(f"#{number}"))
        assert order is not None, name
        assert order.number == str(number)


async def test_unknown_number_is_none(shop: MedusaBackend) -> None:
    assert await shop.get_order("999999") is None


async def test_another_customers_order_comes_with_its_own_identity(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    """A backend decides no access: it says whose order it is (tools/shop/access.py decides)."""
    order = await shop.get_order(str(medusa_engine.orders["other_customer"]))
    assert order is not None
    assert order.customer_phone == BORIS
    assert order.public is False


async def test_orders_by_phone(shop: MedusaBackend, medusa_engine: MedusaEngine) -> None:
    new = medusa_engine.place_order("anna")
    found = await shop.orders_for_phone(ANNA)
    numbers = {o.number for o in found}
    assert str(new) in numbers
    assert str(medusa_engine.orders["processing"]) in numbers
    assert str(medusa_engine.orders["other_customer"]) not in numbers
    assert all(o.customer_phone == ANNA for o in found)
    assert [o.updated_at for o in found] == sorted((o.updated_at for o in found), reverse=True)
    assert await shop.orders_for_phone("+79000000000") == []


async def test_a_status_change_in_the_shop_is_seen_on_the_next_read(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    number = medusa_engine.place_order("anna")
    before = await shop.get_order(str(number))
    assert before is not None and before.status == "processing"
    medusa_engine.ship(number, "TRK-LIVE")
    after = await shop.get_order(str(number))
    assert after is not None and after.status == "in_transit"
    assert after.delivery is not None and after.delivery.tracking_number == "TRK-LIVE"


async def test_a_rejected_key(medusa_engine: MedusaEngine) -> None:
    backend = MedusaBackend(medusa_engine.url, "sk_not_a_key", timeout_s=30)
    try:
        with pytest.raises(ShopSetupError, match="SHOP_API_TOKEN was rejected") as error:
            await backend.check()
        assert "sk_not_a_key" not in str(error.value)
        with pytest.raises(ShopUnavailable) as unavailable:
            await backend.get_order("1")
        assert unavailable.value.kind == "auth"
    finally:
        await backend.aclose()


async def test_check_passes_with_the_right_key(shop: MedusaBackend) -> None:
    await shop.check()


async def test_cancel_happens_once_per_operation(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    number = medusa_engine.place_order("anna")
    order = await shop.get_order(str(number))
    assert order is not None
    assert await shop.cancel_order(order, "op-cancel-1") == ActionDone()
    after = await shop.get_order(str(number))
    assert after is not None and after.status == "cancelled"
    # the same operation again (a retry after a crash): done, nothing new
    assert await shop.cancel_order(order, "op-cancel-1") == ActionDone()
    # another operation finds it already cancelled (by someone else's action)
    assert await shop.cancel_order(order, "op-cancel-2") == ActionRejected("already_cancelled")


async def test_a_shipped_order_is_not_cancelled(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    order = await shop.get_order(str(medusa_engine.orders["in_transit"]))
    assert order is not None
    assert await shop.cancel_order(order, "op-cancel-shipped") == ActionRejected("not_cancellable")
    still = await shop.get_order(order.number)
    assert still is not None and still.status == "in_transit"


async def test_a_return_is_requested_once_per_operation(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    number = medusa_engine.place_order("anna", quantity=2)
    medusa_engine.ship(number, "TRK-RETURN")
    medusa_engine.deliver(number)
    order = await shop.get_order(str(number))
    assert order is not None and order.status == "delivered"
    line = ReturnLine(item=order.items[0], quantity=1)
    first = await shop.request_return(order, [line], "does not fit", "op-return-1")
    assert isinstance(first, ActionDone) and first.reference
    again = await shop.request_return(order, [line], "does not fit", "op-return-1")
    assert again == first
    returns = medusa_engine.admin(
        "GET", f"/admin/returns?order_id={order.ref}&fields=id,status,metadata&limit=50"
    )["returns"]
    ours = [r for r in returns if (r.get("metadata") or {}).get(RETURN_OP_KEY) == "op-return-1"]
    assert [(r["id"], r["status"]) for r in ours] == [(first.reference, "requested")]
    assert len(returns) == 1


NEW_ADDRESS = ShippingAddress(
    line1="Lenina 5", line2="apt. 12", city="Kazan", postal_code="420111", country_code="RU"
)


def _address(medusa_engine: MedusaEngine, number: int) -> dict[str, object]:
    order_id = medusa_engine.order_id(number)
    fields = "id,metadata,shipping_address.*"
    return dict(medusa_engine.admin("GET", f"/admin/orders/{order_id}?fields={fields}")["order"])


async def test_an_address_change_reaches_the_shop_once_per_operation(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    number = medusa_engine.place_order("anna")
    order = await shop.get_order(str(number))
    assert order is not None
    assert await shop.change_address(order, NEW_ADDRESS, "op-address-1") == ActionDone()
    raw = _address(medusa_engine, number)  # read back through the engine's API
    address = raw["shipping_address"]
    assert isinstance(address, dict)
    assert (address["address_1"], address["address_2"], address["city"]) == (
        "Lenina 5",
        "apt. 12",
        "Kazan",
    )
    assert (address["postal_code"], address["country_code"]) == ("420111", "ru")
    assert address["first_name"] == "anna"  # the recipient is kept
    assert raw["metadata"] == {ADDRESS_OP_KEY: "op-address-1"}
    changes = medusa_engine.admin("GET", f"/admin/orders/{medusa_engine.order_id(number)}/changes")[
        "order_changes"
    ]
    # the same operation again (a retry after a crash): done, no second change
    assert await shop.change_address(order, NEW_ADDRESS, "op-address-1") == ActionDone()
    again = medusa_engine.admin("GET", f"/admin/orders/{medusa_engine.order_id(number)}/changes")[
        "order_changes"
    ]
    assert len(again) == len(changes)


async def test_an_address_change_is_refused_once_shipped_or_to_another_country(
    shop: MedusaBackend, medusa_engine: MedusaEngine
) -> None:
    shipped = await shop.get_order(str(medusa_engine.orders["in_transit"]))
    assert shipped is not None
    refused = await shop.change_address(shipped, NEW_ADDRESS, "op-address-shipped")
    assert refused == ActionRejected("already_shipped")
    number = medusa_engine.place_order("boris")
    order = await shop.get_order(str(number))
    assert order is not None
    abroad = ShippingAddress(
        line1="Hauptstr. 1", city="Berlin", postal_code="10115", country_code="DE"
    )
    assert await shop.change_address(order, abroad, "op-address-de") == ActionRejected(
        "country_not_changeable"
    )
    address = _address(medusa_engine, number)["shipping_address"]
    assert isinstance(address, dict) and address["address_1"] == "Tverskaya 1"


async def test_answers_written_in_parts_are_read_whole(medusa_engine: MedusaEngine) -> None:
    """The engine's answers reach the client in four parts with pauses between them (as a
    real network delivers them, tests/fakes/trickle.py): each is read to its end."""
    async with trickling(medusa_engine.url, parts=4, pause_s=0.15) as proxy:
        backend = MedusaBackend(proxy.url, medusa_engine.api_key, timeout_s=30)
        try:
            found = await backend.get_order(str(medusa_engine.orders["in_transit"]))
            mine = await backend.orders_for_phone(ANNA)
        finally:
            await backend.aclose()
    assert found is not None and found.status == "in_transit"
    assert str(medusa_engine.orders["in_transit"]) in {o.number for o in mine}
    assert proxy.answers >= 2
