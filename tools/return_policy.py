"""`get_return_policy`: can this product be returned, within how many days, on what terms.

Customers write product names in any case, with stray spaces and in different word
forms ("наушники", "наушников", "headphones"), so names are normalised the same way
on import and on lookup (`tools.shop.rules`), and a policy may carry aliases.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from tools.base import LookupResult, Tool, ToolContext
from tools.shop.rules import GENERAL_RETURN_POLICY_KEY, normalise_product_name

GET_RETURN_POLICY = "get_return_policy"

DESCRIPTION = (
    "A product's return period in days and return conditions (or the shop's general "
    "return policy when it has none of its own)."
)


class GetReturnPolicyArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    product: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=2, max_length=100)
    ] = Field(
        description=(
            "The product or category as the customer named it, without the order number, "
            "e.g. кофемашина, headphones."
        ),
    )


class ReturnPolicyResult(LookupResult):
    product: str
    found: bool
    matched_product: str | None = None
    return_days: int | None = None
    conditions: str | None = None
    general_policy: str | None = None
    message: str


async def get_return_policy(
    arguments: GetReturnPolicyArguments, context: ToolContext
) -> ReturnPolicyResult:
    policy = await context.shop.find_return_policy(normalise_product_name(arguments.product))
    if policy is None:
        general = await context.shop.get_text(GENERAL_RETURN_POLICY_KEY)
        message = "No specific return policy for this product."
        if general:
            message += " The shop's general return policy is included."
        return ReturnPolicyResult(
            product=arguments.product, found=False, general_policy=general, message=message
        )
    return ReturnPolicyResult(
        product=arguments.product,
        found=True,
        matched_product=policy.display_name,
        return_days=policy.return_days,
        conditions=policy.conditions,
        message="Return policy found.",
    )


def return_policy_tool() -> Tool[GetReturnPolicyArguments, ReturnPolicyResult]:
    return Tool(
        name=GET_RETURN_POLICY,
        description=DESCRIPTION,
        arguments_model=GetReturnPolicyArguments,
        result_model=ReturnPolicyResult,
        handler=get_return_policy,
        timeout_s=5.0,
        read_only=True,
    )
