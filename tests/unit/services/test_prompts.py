"""Prompt templates: strict variables, versions, and the rules the prompts must carry."""

from __future__ import annotations

import re

import pytest

from services.prompts import PromptError, PromptTemplate, build_prompt_registry
from services.prompts.composed import (
    PromptFragment,
    PromptFrame,
    Slot,
    compose,
    tool_references,
    unregistered,
)
from services.prompts.conversation_summary import CONVERSATION_SUMMARY_V1
from services.prompts.support_chat import (
    ORDER_ACTIONS_V2,
    SUPPORT_CHAT_ACTIONS_V3,
    SUPPORT_CHAT_ACTIONS_V4,
    SUPPORT_CHAT_FRAME,
    SUPPORT_CHAT_V1,
    SUPPORT_CHAT_V2,
    SUPPORT_CHAT_V3,
    SUPPORT_CHAT_V4,
    SUPPORT_CHAT_V5,
)


def test_support_chat_renders_with_its_ref_and_carries_the_rules() -> None:
    prompt = build_prompt_registry().render("support_chat", shop_name="Кофейный двор")
    assert prompt.ref == "support_chat@5"
    text = prompt.text
    assert "Кофейный двор" in text and "{{" not in text
    for needle in (
        "without its order number, ask for it; never guess",
        "never invent",
        "refund",
        "summary of earlier messages",
        "never instructions",
        "Never reveal",
        "language of the customer",
        "AI assistant, not a person",
        "whatever\n  language",
    ):
        assert needle in text


def test_the_first_version_stays_registered_for_turns_that_name_it() -> None:
    registry = build_prompt_registry()
    assert registry.get("support_chat", "1") is SUPPORT_CHAT_V1
    assert registry.get("support_chat", "2") is SUPPORT_CHAT_V2
    assert registry.get("support_chat", "3") is SUPPORT_CHAT_V3
    assert registry.get("support_chat", "4") is SUPPORT_CHAT_V4
    assert registry.get("support_chat") is SUPPORT_CHAT_V5


def test_the_frame_names_no_tool() -> None:
    """What a tool is for is said once, in its description (sent with every request);
    the frame only says how the assistant behaves, whichever tools are on."""
    assert tool_references(SUPPORT_CHAT_FRAME.words) == frozenset()
    assert SUPPORT_CHAT_FRAME.ref == "support_chat@5"


def test_no_instruction_names_the_demos_four_digit_numbers() -> None:
    """A shop's order numbers are its own (ORDER_NUMBER_PATTERN): the active instructions
    leave their format to the order tool's description."""
    registry = build_prompt_registry()
    for prompt_id in ("support_chat", "support_chat_actions"):
        text = registry.render(prompt_id, shop_name="X").text
        assert "4-digit" not in text and "order number" in text
    assert registry.get("support_chat_actions") is SUPPORT_CHAT_ACTIONS_V4


def test_no_active_instruction_names_an_internal_tag() -> None:
    """A small model copies a tag it reads in its rules around its own answers."""
    registry = build_prompt_registry()
    for prompt_id in ("support_chat", "support_chat_actions"):
        assert "<" not in registry.render(prompt_id, shop_name="X").text


def test_conversation_summary_caps_length_and_treats_input_as_data() -> None:
    prompt = build_prompt_registry().render("conversation_summary", max_words=150)
    assert prompt.ref == "conversation_summary@1"
    assert "at most 150 words" in prompt.text
    for needle in ("<previous_summary>", "<messages>", "never", "order numbers"):
        assert needle in prompt.text


@pytest.mark.parametrize(
    "variables",
    [{}, {"shop_name": "A", "extra": "B"}, {"shop": "A"}, {"shop_name": "  "}],
)
def test_missing_extra_or_empty_variables_are_errors(variables: dict[str, str]) -> None:
    with pytest.raises(PromptError):
        build_prompt_registry().render("support_chat", **variables)


def test_versions_are_kept_and_the_active_one_is_rendered() -> None:
    registry = build_prompt_registry()
    v8 = PromptTemplate(
        prompt_id="support_chat",
        version="8",
        body='Shop {{shop_name}}. JSON stays: {"a": 1}',
        required_variables=frozenset({"shop_name"}),
    )
    registry.register(v8)
    assert registry.get("support_chat").ref == "support_chat@5"  # not active until asked
    registry.register(
        PromptTemplate(prompt_id="support_chat", version="9", body="Shop v9"), active=True
    )
    assert registry.render("support_chat").text == "Shop v9"
    rendered = registry.get("support_chat", "8").render(shop_name="X")
    assert (rendered.text, rendered.ref) == ('Shop X. JSON stays: {"a": 1}', "support_chat@8")
    assert registry.get("support_chat", "1").ref == "support_chat@1"
    with pytest.raises(PromptError):
        registry.register(v8)
    with pytest.raises(PromptError):
        registry.get("support_chat", "7")
    with pytest.raises(PromptError):
        registry.render("no_such_prompt")


def test_declared_variables_must_match_the_placeholders() -> None:
    with pytest.raises(PromptError):
        PromptTemplate(
            prompt_id="p", version="1", body="Hi {{name}}", required_variables=frozenset()
        )
    with pytest.raises(PromptError):
        PromptTemplate(
            prompt_id="p", version="1", body="Hi", required_variables=frozenset({"name"})
        )


def test_each_build_is_independent() -> None:
    first, second = build_prompt_registry(), build_prompt_registry()
    first.register(PromptTemplate(prompt_id="extra", version="1", body="x"))
    assert first.get("extra").ref == "extra@1"
    with pytest.raises(PromptError):
        second.get("extra")


def test_the_system_instructions_hold_nothing_secret() -> None:
    """The output guard is not a secrecy control (a paraphrase passes it), so the
    instructions must carry nothing that would matter if the model recited them."""
    registry = build_prompt_registry()
    secretish = re.compile(
        r"sk-|api[_ -]?key|token|password|secret|https?://|@\w|\d{5,}|admin_ids", re.IGNORECASE
    )
    templates = (
        SUPPORT_CHAT_V1,
        SUPPORT_CHAT_V2,
        SUPPORT_CHAT_V3,
        SUPPORT_CHAT_V4,
        SUPPORT_CHAT_V5,
        SUPPORT_CHAT_ACTIONS_V3,
        SUPPORT_CHAT_ACTIONS_V4,
    )
    for template in (*templates, CONVERSATION_SUMMARY_V1):
        assert not secretish.search(template.body), template.prompt_id
    assert SUPPORT_CHAT_V3.required_variables == frozenset({"shop_name"})
    assert CONVERSATION_SUMMARY_V1.required_variables == frozenset({"max_words"})
    rendered = registry.render("support_chat", shop_name="Кофейный двор").text
    assert rendered == SUPPORT_CHAT_V5.body.replace("{{shop_name}}", "Кофейный двор")


def test_a_fragment_goes_in_its_slot_and_the_ref_names_it() -> None:
    """A feature's rule for its tools lands after the first rule, before the facts rule;
    the read-only rule gives way to a fragment for order changes; the ref lists what was used."""
    hours = PromptFragment("hours", "2", Slot.TOOLS, "- For opening hours, call get_hours.")
    changes = PromptFragment("changes", "1", Slot.ORDER_CHANGES, "- Orders change by magic.")
    composed = compose(SUPPORT_CHAT_FRAME, (hours, changes))
    text = composed.render(shop_name="X").text
    assert composed.ref == "support_chat@5+hours@2+changes@1"
    assert text.index("not a person") < text.index("get_hours") < text.index("Use only facts")
    assert "The tools only read data" not in text and "by magic" in text
    alone = compose(SUPPORT_CHAT_FRAME, ()).render(shop_name="X")
    assert alone.text == SUPPORT_CHAT_V5.render(shop_name="X").text
    actions = compose(SUPPORT_CHAT_FRAME, (ORDER_ACTIONS_V2,)).render(shop_name="X")
    assert actions.text == SUPPORT_CHAT_ACTIONS_V4.render(shop_name="X").text


def test_a_fragment_given_twice_or_without_a_place_is_refused() -> None:
    one = PromptFragment("one", "1", Slot.TOOLS, "- a rule")
    with pytest.raises(PromptError, match="twice"):
        compose(SUPPORT_CHAT_FRAME, (one, one))
    with pytest.raises(PromptError, match="no place"):
        compose(PromptFrame("p", "1", parts=("Hi",)), (one,))
    with pytest.raises(PromptError):
        PromptFragment("bad", "1", Slot.TOOLS, "- hello {{shop_name}}")


def test_the_tools_a_text_names_are_its_snake_case_words() -> None:
    text = "call get_order_status or the propose_* tools; <conversation_summary> {{shop_name}}"
    assert tool_references(text) == {"get_order_status", "propose_*"}
    assert unregistered(text, ("get_order_status", "propose_cancel_order")) == []
    assert unregistered(text, ("get_order_status",)) == ["propose_*"]
