"""get_return_policy: by name or alias, whatever the case and spacing; unknown products."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from storage.shop import ReturnPolicyUpsert, ShopRepository
from tools.base import ToolCall, ToolContext
from tools.executor import ToolExecutor
from tools.factory import build_registry
from tools.shop.demo import DEMO_RETURN_POLICIES
from tools.shop.rules import normalise_product_name


async def ask(context: ToolContext, product: str) -> dict[str, object]:
    executor = ToolExecutor(build_registry())
    call = ToolCall("c", "get_return_policy", json.dumps({"product": product}))
    return json.loads((await executor.execute(call, context)).content)


@pytest.mark.parametrize(
    ("product", "days", "matched"),
    [
        ("кофемашина", 14, "Кофемашина"),
        ("  КофеМашина  ", 14, "Кофемашина"),
        ("кофемашину", 14, "Кофемашина"),
        ("наушники", 7, "Наушники"),
        ("наушников", 7, "Наушники"),
        ("Headphones", 7, "Наушники"),
        ("клавиатура", 14, "Клавиатура"),
        ("KEYBOARD", 14, "Клавиатура"),
        ("coffee   machine", 14, "Кофемашина"),
    ],
)
async def test_policy_found_by_name_or_alias(
    context_for: Callable[..., ToolContext], product: str, days: int, matched: str
) -> None:
    body = await ask(context_for(), product)
    data = body["data"]
    assert body["ok"] is True
    assert data["found"] is True
    assert data["return_days"] == days
    assert data["matched_product"] == matched
    assert data["conditions"]


async def test_seed_conditions_are_the_course_texts(
    context_for: Callable[..., ToolContext],
) -> None:
    data = (await ask(context_for(), "наушники"))["data"]
    assert data["conditions"] == "Возврат возможен при сохранении упаковки и товарного вида."


async def test_unknown_product_is_not_found_without_general_policy(
    context_for: Callable[..., ToolContext],
) -> None:
    body = await ask(context_for(), "пылесос")
    assert body["ok"] is True
    data = body["data"]
    assert data["found"] is False and "return_days" not in data
    assert "general_policy" not in data


async def test_unknown_product_gets_the_general_policy_when_the_shop_has_one(
    shop: ShopRepository, context_for: Callable[..., ToolContext]
) -> None:
    general = "Товар надлежащего качества можно вернуть в течение 14 дней."
    await shop.import_shop_data(orders=[], policies=[], texts={"general_return_policy": general})
    data = (await ask(context_for(), "пылесос"))["data"]
    assert data["found"] is False and data["general_policy"] == general


async def test_imported_policy_with_aliases_is_found_and_replaces_aliases(
    shop: ShopRepository, context_for: Callable[..., ToolContext]
) -> None:
    await shop.import_shop_data(
        orders=[],
        policies=[
            ReturnPolicyUpsert(
                product="наушники",
                display_name="Наушники",
                return_days=10,
                conditions="Новые условия.",
                aliases=("гарнитура",),
            )
        ],
        texts={},
    )
    assert (await ask(context_for(), "Гарнитура"))["data"]["return_days"] == 10
    assert (await ask(context_for(), "headphones"))["data"]["found"] is False


@pytest.mark.parametrize("product", ["a", " a ", "x" * 101])
async def test_product_length_is_enforced_on_the_host(
    context_for: Callable[..., ToolContext], product: str
) -> None:
    body = await ask(context_for(), product)
    assert body["ok"] is False
    assert body["error"]["code"] == "invalid_arguments"
    assert body["error"]["message"].startswith("product: ")


def test_normalisation() -> None:
    assert normalise_product_name("  Кофе\tМашина \n") == "кофе машина"
    assert normalise_product_name("ЁЛКА") == "елка"
    assert normalise_product_name("Straße") == "strasse"


def test_demo_names_and_aliases_are_stored_normalised() -> None:
    for policy in DEMO_RETURN_POLICIES:
        assert policy.product == normalise_product_name(policy.product)
        for alias in policy.aliases:
            assert alias == normalise_product_name(alias)
