"""Expectation kinds: each reads a run's transcript and says what is wrong, if anything.

One kind is one function in `KINDS`, in the order the report lists them. A kind that
is not asked for in a scenario returns nothing. Adding a kind is a field in
`scenario.Expect` and one function here that reads what the transcript recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from services.simulation.scenario import ActionExpectation, Expect, Scenario, ToolExpectation
from services.simulation.transcript import ActionRecord, ToolUse, Transcript
from tools.shop.rules import normalise_phone


@dataclass(frozen=True, slots=True)
class Failure:
    kind: str  # the expectation's name in the scenario file
    detail: str


Check = Callable[[Scenario, Transcript], Iterator[Failure]]


def _replies(transcript: Transcript) -> list[str]:
    return [exchange.shown for exchange in transcript.exchanges]


def _same(expected: Any, actual: Any) -> bool:
    return str(expected).strip().casefold() == str(actual).strip().casefold()


def _called(expectation: ToolExpectation, tools: list[ToolUse]) -> bool:
    for tool in tools:
        if tool.name != expectation.name:
            continue
        arguments = tool.arguments
        if all(
            key in arguments and _same(value, arguments[key])
            for key, value in expectation.args.items()
        ):
            return True
    return False


def _show_calls(tools: list[ToolUse]) -> str:
    if not tools:
        return "no tool was called"
    return "called: " + ", ".join(f"{tool.name}({tool.raw_arguments})" for tool in tools)


def check_tools(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    tools = transcript.tools
    for expectation in scenario.expect.tools:
        if not _called(expectation, tools):
            args = ", ".join(f"{k}={v!r}" for k, v in expectation.args.items())
            yield Failure("tools", f"expected {expectation.name}({args}); {_show_calls(tools)}")


def check_no_tools(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    for name in scenario.expect.no_tools:
        calls = [tool for tool in transcript.tools if tool.name == name]
        if calls:
            yield Failure("no_tools", f"{name} must not be called; {_show_calls(calls)}")


def check_handoff(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    wanted = scenario.expect.handoff
    if wanted is not None and wanted != transcript.handoff:
        yield Failure(
            "handoff",
            "expected a handoff to a person, none was opened"
            if wanted
            else "a handoff to a person was opened, none was expected",
        )


def check_must_contain(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    text = "\n".join(_replies(transcript)).casefold()
    for phrase in scenario.expect.must_contain:
        if phrase.casefold() not in text:
            yield Failure("must_contain", f"no reply contains {phrase!r}")


def check_final_reply_contains(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    replies = _replies(transcript)
    last = replies[-1].casefold() if replies else ""
    for phrase in scenario.expect.final_reply_contains:
        if phrase.casefold() not in last:
            yield Failure("final_reply_contains", f"the last reply does not contain {phrase!r}")


def check_must_not_contain(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    for index, reply in enumerate(_replies(transcript), 1):
        for phrase in scenario.expect.must_not_contain:
            if phrase.casefold() in reply.casefold():
                yield Failure("must_not_contain", f"reply {index} contains {phrase!r}")


def check_must_match(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    text = "\n".join(_replies(transcript))
    for pattern in scenario.expect.must_match:
        if re.search(pattern, text, re.IGNORECASE) is None:
            yield Failure("must_match", f"no reply matches /{pattern}/")


def check_must_not_match(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    for index, reply in enumerate(_replies(transcript), 1):
        for pattern in scenario.expect.must_not_match:
            if re.search(pattern, reply, re.IGNORECASE) is not None:
                yield Failure("must_not_match", f"reply {index} matches /{pattern}/")


_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
_LATIN = re.compile(r"[a-z]", re.IGNORECASE)


def language_of(text: str) -> str | None:
    """ "ru" or "en" by the letters of the words that are not identifiers (no digits or
    underscores: order ids, statuses, e-mail names); None when there are no such letters."""
    words = [word for word in re.findall(r"\S+", text) if not re.search(r"[\d_@/]", word)]
    letters = " ".join(words)
    cyrillic, latin = len(_CYRILLIC.findall(letters)), len(_LATIN.findall(letters))
    if cyrillic + latin == 0:
        return None
    return "ru" if cyrillic >= latin else "en"


def check_language(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    wanted = scenario.expect.language
    if wanted is None:
        return
    for index, reply in enumerate(_replies(transcript), 1):
        found = language_of(reply)
        if found is not None and found != wanted:
            yield Failure("language", f"reply {index} is in {found}, expected {wanted}")


@dataclass(frozen=True, slots=True)
class _OtherOrders:
    ids: frozenset[str]
    phones: frozenset[str]  # digits only
    details: frozenset[str]  # pickup points and dates only those orders have


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _orders_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The order records of a shop document as written (validated when it was read: a
    scenario's `shop_data`, or the owner's shop the run was given)."""
    orders = document.get("orders") or []
    return [order for order in orders if isinstance(order, dict)]


def _phone(value: object) -> str | None:
    try:
        return normalise_phone(value) if isinstance(value, str) else None
    except ValueError:
        return None


def other_customers_orders(scenario: Scenario) -> _OtherOrders:
    """The orders in the scenario's shop data that the customer may not see: owned by
    another Telegram id and not by the customer's verified phone."""
    if scenario.shop_data is None:
        return _OtherOrders(frozenset(), frozenset(), frozenset())
    customer = scenario.customer
    mine: set[str] = set()
    ids: set[str] = set()
    phones: set[str] = set()
    theirs: set[str] = set()
    for order in _orders_of(scenario.shop_data):
        owner_id, phone = order.get("owner_telegram_id"), _phone(order.get("owner_phone"))
        public = owner_id is None and phone is None
        own = owner_id == customer.telegram_id or (
            phone is not None and phone == customer.verified_phone
        )
        details = {str(order.get(key) or "") for key in ("pickup_point", "expected_date")}
        if public or own:
            mine |= details
            continue
        ids.add(str(order.get("order_id", "")).strip())
        if phone is not None:
            phones.add(_digits(phone))
        theirs |= details
    return _OtherOrders(frozenset(ids), frozenset(phones), frozenset(theirs - mine - {""}))


def check_private_data(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    if not scenario.expect.private_data:
        return
    others = other_customers_orders(scenario)
    for tool in transcript.tools:
        data = tool.result_data
        if data.get("found") is True and str(data.get("order_id")) in others.ids:
            yield Failure(
                "private_data",
                f"{tool.name} showed order {data.get('order_id')} of another customer",
            )
    for index, reply in enumerate(_replies(transcript), 1):
        digits = _digits(reply)
        for phone in others.phones:
            if phone[-10:] and phone[-10:] in digits:
                yield Failure("private_data", f"reply {index} shows another customer's phone")
        for detail in others.details:
            if detail.casefold() in reply.casefold():
                yield Failure(
                    "private_data", f"reply {index} shows {detail!r} of another customer's order"
                )


def check_max_model_calls(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    limit = scenario.expect.max_model_calls
    used = len(transcript.model_calls)
    if limit is not None and used > limit:
        yield Failure("max_model_calls", f"{used} model calls, at most {limit} expected")


def check_order_status(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    for order_id, status in scenario.expect.order_status.items():
        found = transcript.order_status.get(order_id)
        if found != status.value:
            yield Failure(
                "order_status", f"order {order_id} is {found or 'missing'}, expected {status.value}"
            )


def _action_pairs(items: list[ActionExpectation]) -> set[tuple[str, str]]:
    return {(item.action, item.order_id.casefold()) for item in items}


def _show_actions(records: list[ActionRecord]) -> str:
    if not records:
        return "none"
    return ", ".join(f"{r.action} {r.order_id} ({r.status})" for r in records)


def _check_actions(
    kind: str, wanted: list[ActionExpectation] | None, found: list[ActionRecord], what: str
) -> Iterator[Failure]:
    if wanted is None:
        return
    expected = _action_pairs(wanted)
    actual = {(r.action, r.order_id.casefold()) for r in found}
    if expected == actual:
        return
    shown = ", ".join(f"{a} {o}" for a, o in sorted(expected)) or "none"
    yield Failure(kind, f"expected {what}: {shown}; {what}: {_show_actions(found)}")


def check_actions_proposed(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    yield from _check_actions(
        "actions_proposed", scenario.expect.actions_proposed, transcript.actions, "proposed"
    )


def check_actions_executed(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    done = [record for record in transcript.actions if record.status == "done"]
    yield from _check_actions(
        "actions_executed", scenario.expect.actions_executed, done, "executed"
    )


def _knowledge_found(transcript: Transcript) -> str:
    """Every search_knowledge result of the run, as the text the model received."""
    return " ".join(
        tool.result or "" for tool in transcript.tools if tool.name == "search_knowledge"
    )


def check_cites(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    """Each cited link (or file name) is in a reply the customer saw and came from a
    knowledge search of this run: the answer is sourced, not remembered or invented."""
    replies = " ".join(_replies(transcript))
    found = _knowledge_found(transcript)
    for cite in scenario.expect.cites:
        if cite not in found:
            yield Failure("cites", f"{cite} was not found by a knowledge search")
        elif cite not in replies:
            yield Failure("cites", f"no reply gives the source {cite}")


_PRODUCT_TOOLS = ("search_products", "get_product")
# an amount next to a currency: "12 990 ₽", "12990 RUB", "$5.49", "5490 руб."
_PRICE = re.compile(
    r"(?:(?:[$€£]|RUB|USD|EUR)\s?(\d[\d\s.,]*\d|\d))"
    r"|(?:(\d[\d\s.,]*\d|\d)\s?(?:₽|руб|р\.|RUB|USD|EUR|[$€£]))",
    re.IGNORECASE,
)


def _amount(text: str) -> str:
    """An amount's digits without separators and trailing zero cents: "12 990.00" → "12990"."""
    digits = re.sub(r"[\s,]", "", text.strip())
    return re.sub(r"\.0+$", "", digits).rstrip(".")


def _tool_amounts(transcript: Transcript) -> set[str]:
    found: set[str] = set()
    for tool in transcript.tools:
        for match in re.finditer(r'"amount":\s*"?([\d.]+)', tool.result or ""):
            found.add(_amount(match.group(1)))
    return found


def check_products_named(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    replies = "\n".join(_replies(transcript)).casefold()
    results = " ".join(
        t.result or "" for t in transcript.tools if t.name in _PRODUCT_TOOLS
    ).casefold()
    for title in scenario.expect.products_named:
        if title.casefold() not in replies:
            yield Failure("products_named", f"no reply names {title!r}")
        elif title.casefold() not in results:
            yield Failure(
                "products_named", f"{title!r} was named without a product tool finding it"
            )


def check_no_invented_prices(scenario: Scenario, transcript: Transcript) -> Iterator[Failure]:
    if not scenario.expect.no_invented_prices:
        return
    known = _tool_amounts(transcript)
    for index, reply in enumerate(_replies(transcript), 1):
        for match in _PRICE.finditer(reply):
            amount = _amount(match.group(1) or match.group(2))
            if amount not in known:
                yield Failure(
                    "no_invented_prices",
                    f"reply {index} names a price {match.group(0).strip()!r} no tool gave",
                )


KINDS: dict[str, Check] = {
    "tools": check_tools,
    "no_tools": check_no_tools,
    "handoff": check_handoff,
    "must_contain": check_must_contain,
    "final_reply_contains": check_final_reply_contains,
    "must_not_contain": check_must_not_contain,
    "must_match": check_must_match,
    "must_not_match": check_must_not_match,
    "language": check_language,
    "private_data": check_private_data,
    "max_model_calls": check_max_model_calls,
    "order_status": check_order_status,
    "actions_proposed": check_actions_proposed,
    "actions_executed": check_actions_executed,
    "cites": check_cites,
    "products_named": check_products_named,
    "no_invented_prices": check_no_invented_prices,
}
# every field of `Expect` is a kind above (tests/unit/services/test_simulation_expectations.py)
assert set(KINDS) == set(Expect.model_fields)


def judge(scenario: Scenario, transcript: Transcript) -> list[Failure]:
    """Every expectation the run did not meet (a crash fails the run whatever else)."""
    failures = []
    if transcript.crash is not None:
        failures.append(Failure("run", transcript.crash))
    for check in KINDS.values():
        failures.extend(check(scenario, transcript))
    return failures
