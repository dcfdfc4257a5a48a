"""Shop-data import: whole-document validation, all-or-nothing upserts, demo seeding."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.programs.data_import import run_import
from storage.actions import ActionRepository
from storage.database import Database, open_database
from storage.shop import ShopRepository
from tools.shop.backends.http import OrderIn as HttpOrderIn
from tools.shop.backends.http import to_live_order
from tools.shop.backends.local import LocalBackend
from tools.shop.demo import DEMO_ORDER_IDS, demo_orders, seed_demo_shop
from tools.shop.import_document import MAX_FILE_ITEMS, ShopDataError, plan_import
from tools.shop.orders import Delivery, LiveOrder, Money, OrderItem

VALID: dict[str, Any] = {
    "orders": [
        {
            "order_id": "1234",
            "status": "in_transit",
            "owner_telegram_id": 42,
            "expected_date": "2026-12-01",
            "updated_at": "2026-11-29T10:00:00+03:00",
        },
        {"order_id": "8041", "status": "delivered"},
    ],
    "return_policies": [
        {
            "product": "  Ноутбук ",
            "return_days": 14,
            "conditions": "Без следов использования.",
            "aliases": ["Laptop", "ноутбука"],
        }
    ],
    "general_return_policy": "Остальные товары — 7 дней.",
}


def http_order(body: dict[str, Any]) -> LiveOrder:
    """An order of the HTTP contract as the `http` backend reads it."""
    return to_live_order(HttpOrderIn.model_validate(body))


def problems_of(document: Any) -> list[str]:
    with pytest.raises(ShopDataError) as caught:
        plan_import(document)
    return caught.value.problems


def test_problems_name_the_record_and_the_field() -> None:
    problems = problems_of(
        {
            "orders": [
                {"order_id": "8041", "status": "in_transit"},
                {"order_id": "12a4", "status": "lost", "owner": 1},
                {"order_id": "7777", "status": "delivered", "owner_telegram_id": True},
            ],
            "return_policies": [{"product": "x", "return_days": -1}],
            "shop": {},
        }
    )
    joined = "\n".join(problems)
    assert "orders[1] (order_id '12a4').order_id: must be exactly 4 digits" in joined
    assert "orders[1] (order_id '12a4').status: Input should be 'processing'" in joined
    assert "orders[1] (order_id '12a4').owner: unknown field" in joined
    assert "orders[2] (order_id '7777').owner_telegram_id:" in joined
    assert "return_policies[0] (product 'x').product:" in joined
    assert "return_policies[0] (product 'x').return_days:" in joined
    assert "return_policies[0] (product 'x').conditions: required field is missing" in joined
    assert "shop: unknown field" in joined
    assert not any(p.startswith("orders[0]") for p in problems)


def test_duplicates_across_records_are_problems() -> None:
    problems = problems_of(
        {
            "orders": [
                {"order_id": "1111", "status": "delivered"},
                {"order_id": "1111", "status": "cancelled"},
            ],
            "return_policies": [
                {"product": "Ноутбук", "return_days": 3, "conditions": "c", "aliases": ["laptop"]},
                {"product": "планшет", "return_days": 3, "conditions": "c", "aliases": ["LAPTOP"]},
                {"product": "НОУТБУК ", "return_days": 3, "conditions": "c"},
            ],
        }
    )
    assert any(p.startswith("orders[1] (order_id '1111').order_id: duplicate") for p in problems)
    assert any(p.startswith("return_policies[1]") and "aliases[0]" in p for p in problems)
    assert any(p.startswith("return_policies[2]") and ".product: same name" in p for p in problems)


@pytest.mark.parametrize("document", [[], "x", 3, None])
def test_document_must_be_an_object(document: Any) -> None:
    assert problems_of(document)[0].startswith("document:")


def test_plan_normalises_names_and_keeps_omitted_fields_out() -> None:
    plan = plan_import(VALID)
    assert plan.orders[0].values["owner_telegram_id"] == 42
    assert plan.orders[1].values == {"status": "delivered"}
    policy = plan.policies[0]
    assert (policy.product, policy.display_name) == ("ноутбук", "Ноутбук")
    assert policy.aliases == ("laptop", "ноутбука")
    assert plan.texts == {"general_return_policy": "Остальные товары — 7 дней."}


async def test_reimport_updates_and_omitted_fields_keep_their_values(db: Database) -> None:
    shop = ShopRepository(db)
    first = await shop.import_shop_data(**vars_of(plan_import(VALID)))
    assert (first.orders_inserted, first.orders_updated) == (2, 0)
    assert (first.policies_inserted, first.policies_updated) == (1, 0)

    update = {
        "orders": [{"order_id": "1234", "status": "delivered"}],
        "return_policies": [{"product": "ноутбук", "return_days": 30, "conditions": "Новые."}],
    }
    second = await shop.import_shop_data(**vars_of(plan_import(update)))
    assert (second.orders_inserted, second.orders_updated) == (0, 1)
    assert (second.policies_inserted, second.policies_updated) == (0, 1)
    order = await shop.get_order("1234")
    assert order is not None and order.status == "delivered"
    assert order.owner_telegram_id == 42  # a re-import without the owner keeps it private
    policy = await shop.find_return_policy("laptop")  # aliases kept when not given
    assert policy is not None and policy.return_days == 30

    cleared = {"orders": [{"order_id": "1234", "status": "delivered", "owner_telegram_id": None}]}
    await shop.import_shop_data(**vars_of(plan_import(cleared)))
    order = await shop.get_order("1234")
    assert order is not None and order.owner_telegram_id is None


async def test_no_demo_is_seeded_next_to_the_shops_own_data(db: Database) -> None:
    shop = ShopRepository(db)
    await shop.import_shop_data(**vars_of(plan_import({"orders": VALID["orders"]})))
    assert await seed_demo_shop(shop) is False  # the policies are empty, but not the shop
    assert await shop.get_order("9912") is None
    assert (await shop.get_order("8041")).status == "delivered"  # type: ignore[union-attr]
    assert await shop.find_return_policy("кофемашина") is None
    assert await shop.faq_topics(10) == []


async def test_seed_on_an_empty_database(db: Database) -> None:
    shop = ShopRepository(db)
    assert await seed_demo_shop(shop) is True
    statuses = {oid: (await shop.get_order(oid)).status for oid in ("8041", "7718", "9912")}  # type: ignore[union-attr]
    assert statuses == {"8041": "in_transit", "7718": "delivered", "9912": "ready_for_pickup"}
    for oid in statuses:
        assert (await shop.get_order(oid)).owner_telegram_id is None  # type: ignore[union-attr]


async def test_run_import_writes_nothing_when_any_record_is_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "shop.sqlite3"
    monkeypatch.setenv("DATABASE_PATH", str(database))
    document = json.loads(json.dumps(VALID))
    document["orders"].append({"order_id": "99999", "status": "in_transit"})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")

    assert await run_import(str(path)) == 1
    err = capsys.readouterr().err
    assert "orders[2] (order_id '99999').order_id: must be exactly 4 digits" in err
    assert "nothing was written" in err
    if database.exists():
        db = await open_database(database)
        try:
            assert await db.fetch_one("SELECT 1 FROM orders") is None
            assert await db.fetch_one("SELECT 1 FROM return_policies") is None
        finally:
            await db.close()


async def test_run_import_reports_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_PATH", str(tmp_path / "shop.sqlite3"))
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(VALID, ensure_ascii=False), encoding="utf-8")
    assert await run_import(str(path)) == 0
    assert "orders: 2 inserted, 0 updated" in capsys.readouterr().out
    assert await run_import(str(path)) == 0
    out = capsys.readouterr().out
    assert "orders: 0 inserted, 2 updated" in out
    assert "return policies: 0 inserted, 1 updated" in out
    assert "open requests" not in out


async def test_run_import_names_the_orders_with_open_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Actions on imported data are requests to the shop's people: an import tells the
    owner which orders still wait for their Done / Refuse."""
    database = tmp_path / "shop.sqlite3"
    monkeypatch.setenv("DATABASE_PATH", str(database))
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(VALID, ensure_ascii=False), encoding="utf-8")
    assert await run_import(str(path)) == 0
    db = await open_database(database)
    try:
        requests = ActionRepository(db)
        for op, order in (("a" * 32, "1234"), ("b" * 32, "8041"), ("c" * 32, "1234")):
            await requests.open_request(op, order)
        await requests.answer_done("b" * 32, by=1)
    finally:
        await db.close()
    capsys.readouterr()
    assert await run_import(str(path)) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if "open requests" in x]
    assert line.endswith(": 2 (orders 1234)")


@pytest.mark.parametrize("content", ["{not json", "", "\udcff"])
async def test_run_import_unreadable_or_not_json_is_status_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    content: str,
) -> None:
    monkeypatch.setenv("DATABASE_PATH", str(tmp_path / "shop.sqlite3"))
    path = tmp_path / "shop.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    assert await run_import(str(path)) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert await run_import(str(tmp_path / "missing.json")) == 2


def vars_of(plan: Any) -> dict[str, Any]:
    return {"orders": plan.orders, "policies": plan.policies, "texts": plan.texts}


async def test_a_database_error_midway_rolls_back_the_whole_import(db: Database) -> None:
    from storage.shop import OrderUpsert

    shop = ShopRepository(db)
    orders = [
        OrderUpsert(order_id="1111", values={"status": "delivered"}),
        OrderUpsert(order_id="2222", values={"status": "lost"}),  # violates the CHECK
    ]
    with pytest.raises(Exception, match=r"(?i)check"):
        await shop.import_shop_data(orders=orders, policies=[], texts={})
    assert await shop.get_order("1111") is None


def test_problems_are_capped_but_all_counted() -> None:
    with pytest.raises(ShopDataError) as caught:
        plan_import({"orders": [{"order_id": "1"}] * 300})
    # two problems per record (order_id, status), only the first 100 kept
    assert caught.value.total == 600
    assert len(caught.value.problems) == 100
    assert caught.value.problems[0].startswith("orders[0] (order_id '1').order_id:")


def test_an_owner_id_must_be_a_telegram_id() -> None:
    problems = problems_of(
        {"orders": [{"order_id": "1234", "status": "delivered", "owner_telegram_id": 2**63}]}
    )
    assert problems == [
        "orders[0] (order_id '1234').owner_telegram_id: Input should be less than 4503599627370496"
    ]


# ------------------------------------------------------------------ the FAQ section

FAQ: list[dict[str, Any]] = [
    {"topic": " Доставка ", "answer": "Курьером — 500 ₽.", "aliases": ["Delivery", "доставки"]},
    {"topic": "Оплата", "answer": "Картой или наличными."},
]


def test_faq_is_planned_as_keys_in_file_order() -> None:
    plan = plan_import({"faq": [*FAQ, {"topic": "E-mail", "answer": "a@b.c", "aliases": []}]})
    assert plan.faq is not None
    assert [(e.key, e.topic, e.aliases) for e in plan.faq] == [
        ("доставка", "Доставка", ("delivery", "доставки")),
        ("оплата", "Оплата", ()),
        ("e mail", "E-mail", ()),
    ]
    assert plan.faq[0].answer == "Курьером — 500 ₽."
    assert plan_import({"orders": []}).faq is None  # no `faq`: the stored FAQ stays
    assert plan_import({"faq": []}).faq == []  # an empty list removes every entry


def test_faq_problems_name_the_entry_and_the_field() -> None:
    problems = problems_of(
        {
            "faq": [
                {"topic": "Доставка", "answer": "ok"},
                {"topic": "x", "answer": "", "question": "?"},
                {"topic": "?!", "answer": "a" * 2001, "aliases": ["ok", "--"]},
                {"answer": "no topic"},
            ]
        }
    )
    assert problems == [
        "faq[1] (topic 'x').topic: String should have at least 2 characters",
        "faq[1] (topic 'x').answer: String should have at least 1 character",
        "faq[1] (topic 'x').question: unknown field",
        "faq[2] (topic '?!').topic: must contain a letter or a digit",
        "faq[2] (topic '?!').answer: String should have at most 2000 characters",
        "faq[2] (topic '?!').aliases[1]: must contain a letter or a digit",
        "faq[3].topic: required field is missing",
    ]
    assert problems_of({"faq": None}) == ["faq: Input should be a valid list"]
    assert problems_of({"faq": [{"topic": "Тема", "answer": "a", "aliases": ["xx"] * 51}]}) == [
        "faq[0] (topic 'Тема').aliases: List should have at most 50 items after validation, not 51"
    ]


def test_faq_duplicate_topics_and_aliases_across_entries_are_problems() -> None:
    problems = problems_of(
        {
            "faq": [
                {"topic": "Доставка", "answer": "a", "aliases": ["delivery", "ДОСТАВКА", "оплата"]},
                {"topic": "оплата", "answer": "b", "aliases": ["Delivery!"]},
                {"topic": "доставка?", "answer": "c"},
            ]
        }
    )
    assert problems == [
        "faq[1] (topic 'оплата').topic: 'оплата' is already used by "
        "faq[0] (topic 'Доставка').aliases[2]",
        "faq[1] (topic 'оплата').aliases[0]: 'Delivery!' is already used by "
        "faq[0] (topic 'Доставка').aliases[0]",
        "faq[2] (topic 'доставка?').topic: 'доставка?' is already used by "
        "faq[0] (topic 'Доставка').topic",
    ]


async def test_faq_import_replaces_the_whole_faq_including_the_demo(db: Database) -> None:
    shop = ShopRepository(db)
    assert await seed_demo_shop(shop) is True
    assert "delivery" in await shop.find_faq_entries(["delivery"])  # the demo entry

    plan = plan_import({"faq": FAQ})
    counts = await shop.import_shop_data(**vars_of(plan), faq=plan.faq)
    # the demo rows are removed first: the shop's entries are its own, not updated demo ones
    assert (counts.faq_inserted, counts.faq_updated, counts.faq_removed) == (2, 0, 0)
    assert counts.demo_removed.faq == 3
    found = await shop.find_faq_entries(["delivery", "контакты", "оплата"])
    assert found["delivery"].answer == "Курьером — 500 ₽."
    assert "контакты" not in found  # the demo contacts are gone, not mixed in
    assert await shop.faq_topics(10) == ["Доставка", "Оплата"]
    assert await seed_demo_shop(shop) is False  # the shop has its own rows

    emptied = await shop.import_shop_data(orders=[], policies=[], texts={}, faq=[])
    assert emptied.faq_removed == 2 and await shop.faq_topics(10) == []
    kept = await shop.import_shop_data(**vars_of(plan_import({"orders": []})))
    assert (kept.faq_inserted, kept.faq_removed) == (0, 0)


async def test_run_import_writes_nothing_when_only_the_faq_is_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "shop.sqlite3"
    monkeypatch.setenv("DATABASE_PATH", str(database))
    document = {**VALID, "faq": [*FAQ, {"topic": "DELIVERY", "answer": "dup"}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")

    assert await run_import(str(path)) == 1
    err = capsys.readouterr().err
    assert "faq[2] (topic 'DELIVERY').topic: 'DELIVERY' is already used by" in err
    assert "nothing was written" in err
    if database.exists():
        db = await open_database(database)
        try:
            for table in ("orders", "return_policies", "shop_texts", "faq_entries"):
                assert await db.fetch_one(f"SELECT 1 FROM {table}") is None, table
        finally:
            await db.close()


async def test_run_import_reports_faq_counts_only_when_the_file_has_faq(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_PATH", str(tmp_path / "shop.sqlite3"))
    path = tmp_path / "shop.json"
    path.write_text(json.dumps({**VALID, "faq": FAQ}, ensure_ascii=False), encoding="utf-8")
    assert await run_import(str(path)) == 0
    assert "faq: 2 inserted, 0 updated, 0 removed" in capsys.readouterr().out
    path.write_text(json.dumps({"faq": FAQ[:1]}, ensure_ascii=False), encoding="utf-8")
    assert await run_import(str(path)) == 0
    assert "faq: 0 inserted, 1 updated, 1 removed" in capsys.readouterr().out
    path.write_text(json.dumps(VALID, ensure_ascii=False), encoding="utf-8")
    assert await run_import(str(path)) == 0
    assert "faq:" not in capsys.readouterr().out


async def test_a_shop_with_its_own_orders_never_gets_the_demo_faq(db: Database) -> None:
    """An existing shop's database gains an empty FAQ table on upgrade: made-up
    delivery prices must not be seeded next to the shop's real orders."""
    shop = ShopRepository(db)
    await shop.import_shop_data(**vars_of(plan_import({"orders": VALID["orders"]})))
    await seed_demo_shop(shop)
    assert await shop.faq_topics(10) == []


async def test_a_demo_database_gains_the_demo_faq_on_upgrade(db: Database) -> None:
    shop = ShopRepository(db)
    orders = demo_orders(datetime.now(UTC))
    assert {order.order_id for order in orders} == set(DEMO_ORDER_IDS)
    await shop.seed_demo(orders=orders, policies=())
    assert await seed_demo_shop(shop) is True
    assert await shop.faq_topics(10) != []


def test_owner_phone_is_stored_in_e164_whatever_the_spelling() -> None:
    plan = plan_import(
        {
            "orders": [
                {"order_id": "1001", "status": "in_transit", "owner_phone": "8 (912) 345-67-89"},
                {"order_id": "1002", "status": "in_transit", "owner_phone": "+44 20 7946 0958"},
                {"order_id": "1003", "status": "in_transit", "owner_phone": None},
                {"order_id": "1004", "status": "in_transit"},
            ]
        }
    )
    values = {order.order_id: dict(order.values) for order in plan.orders}
    assert values["1001"]["owner_phone"] == "+79123456789"
    assert values["1002"]["owner_phone"] == "+442079460958"
    assert values["1003"]["owner_phone"] is None  # explicit null clears it
    assert "owner_phone" not in values["1004"]  # left out: the stored one is kept


def test_invalid_owner_phones_are_listed_problems_that_never_repeat_the_number() -> None:
    problems = problems_of(
        {
            "orders": [
                {"order_id": "1001", "status": "in_transit", "owner_phone": "9123456789"},
                {"order_id": "1002", "status": "in_transit", "owner_phone": "+7 912 ABC"},
                {"order_id": "1003", "status": "in_transit", "owner_phone": 79123456789},
                {"order_id": "1004", "status": "in_transit", "owner_phone": "+79123456789"},
            ]
        }
    )
    assert len(problems) == 3
    assert problems[0].startswith("orders[0] (order_id '1001').owner_phone: must be an inter")
    assert problems[1].startswith("orders[1] (order_id '1002').owner_phone: must be an inter")
    assert problems[2].startswith("orders[2] (order_id '1003').owner_phone:")
    joined = "\n".join(problems)
    assert "9123456789" not in joined and "ABC" not in joined


async def test_an_invalid_owner_phone_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "shop.sqlite3"
    monkeypatch.setenv("DATABASE_PATH", str(database))
    path = tmp_path / "shop.json"
    path.write_text(
        json.dumps(
            {
                "orders": [
                    {"order_id": "1001", "status": "in_transit", "owner_phone": "+79123456789"},
                    {"order_id": "1002", "status": "in_transit", "owner_phone": "+7 912 34"},
                ]
            }
        ),
        encoding="utf-8",
    )
    assert await run_import(str(path)) == 1
    captured = capsys.readouterr()
    assert "orders[1] (order_id '1002').owner_phone: must be an international" in captured.err
    assert "912" not in captured.err
    if database.exists():
        db = await open_database(database)
        try:
            assert await db.fetch_one("SELECT 1 FROM orders") is None
        finally:
            await db.close()


DETAILED = {
    "orders": [
        {
            "order_id": "1234",
            "status": "in_transit",
            "owner_phone": "+79123456789",
            "updated_at": "2026-12-01T09:30:00+03:00",
            "items": [{"name": "Улун Те Гуань Инь, 100 г", "quantity": 2}, {"name": "Чайник"}],
            "total": {"amount": "3480.50", "currency": "rub"},
            "carrier": "СДЭК",
            "tracking_number": "1234567890",
            "tracking_url": "https://www.cdek.ru/ru/tracking?order_id=1234567890",
        }
    ]
}


async def test_items_total_and_tracking_are_shown_like_a_live_backends(db: Database) -> None:
    shop = ShopRepository(db)
    await shop.import_shop_data(**vars_of(plan_import(DETAILED)))
    order = await LocalBackend(shop).get_order("1234")
    assert order is not None
    assert order.items == (
        OrderItem("Улун Те Гуань Инь, 100 г", 2),
        OrderItem("Чайник", 1),
    )
    assert order.total == Money(Decimal("3480.50"), "RUB")
    assert order.delivery == Delivery(
        carrier="СДЭК",
        tracking_number="1234567890",
        tracking_url="https://www.cdek.ru/ru/tracking?order_id=1234567890",
    )
    # the same `LiveOrder` the HTTP backend makes of the contract's order
    contract = http_order(
        {
            "number": "1234",
            "status": "in_transit",
            "updated_at": "2026-12-01T09:30:00+03:00",
            "customer": {"phone": "+79123456789"},
            "items": [{"name": "Улун Те Гуань Инь, 100 г", "quantity": 2}, {"name": "Чайник"}],
            "delivery": {
                "carrier": "СДЭК",
                "tracking_number": "1234567890",
                "tracking_url": "https://www.cdek.ru/ru/tracking?order_id=1234567890",
            },
            "total": {"amount": "3480.50", "currency": "RUB"},
        }
    )
    assert order == replace(contract, public=False)

    # left out: kept; null: cleared (as every order field)
    await shop.import_shop_data(
        **vars_of(plan_import({"orders": [{"order_id": "1234", "status": "delivered"}]}))
    )
    kept = await LocalBackend(shop).get_order("1234")
    assert kept is not None and kept.items == order.items and kept.total == order.total
    cleared = {"order_id": "1234", "status": "delivered", "items": None, "total": None}
    await shop.import_shop_data(**vars_of(plan_import({"orders": [cleared]})))
    gone = await LocalBackend(shop).get_order("1234")
    assert gone is not None and (gone.items, gone.total) == ((), None)
    assert gone.delivery is not None and gone.delivery.carrier == "СДЭК"


def test_bad_items_totals_and_tracking_are_named_one_by_one() -> None:
    good = DETAILED["orders"][0]
    problems = problems_of(
        {
            "orders": [
                {**good, "order_id": "1001", "items": [{"name": "Чай", "quantity": 0}]},
                {**good, "order_id": "1002", "items": [{"quantity": 1}, {"name": "x", "qty": 1}]},
                {**good, "order_id": "1003", "total": {"amount": "-5", "currency": "RUB"}},
                {**good, "order_id": "1004", "total": {"amount": "10", "currency": "рубли"}},
                {**good, "order_id": "1005", "total": {"amount": "NaN", "currency": "RUB"}},
                {**good, "order_id": "1006", "tracking_url": "javascript:alert(1)"},
                {**good, "order_id": "1007", "items": "чай"},
                {**good, "order_id": "1008", "total": {"amount": "10"}},
            ]
        }
    )
    joined = "\n".join(problems)
    assert "orders[0] (order_id '1001').items[0].quantity:" in joined
    assert "orders[1] (order_id '1002').items[0].name: required field is missing" in joined
    assert "orders[1] (order_id '1002').items[1].qty: unknown field" in joined
    assert "orders[2] (order_id '1003').total.amount:" in joined
    assert "orders[3] (order_id '1004').total.currency: must be a three-letter" in joined
    assert "orders[4] (order_id '1005').total.amount:" in joined
    assert "orders[5] (order_id '1006').tracking_url: must be an http" in joined
    assert "orders[6] (order_id '1007').items:" in joined
    assert "orders[7] (order_id '1008').total.currency: required field is missing" in joined
    assert len(problems) == 9


def test_the_items_of_one_file_are_bounded() -> None:
    orders = [
        {"order_id": f"{n:04d}", "status": "processing", "items": [{"name": "x"}] * 200}
        for n in range(251)
    ]
    problems = problems_of({"orders": orders})
    assert problems == [
        f"orders: {251 * 200} items in all, at most {MAX_FILE_ITEMS} per file; split the file"
    ]
