"""TOOL_GUIDE: the offered tools named at the end of the instruction, for small models.

Through the real loop, registry and chat service with the scripted model: what the model
is sent, and what the turn stores as the prompt it saw.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from services.chat import ChatOptions, ChatService, build_chat_service
from services.loop import BoundedToolLoop
from services.prompts import build_prompt_registry
from services.prompts.tool_guide import guide_text
from storage.database import Database
from storage.shop import ShopRepository
from tests.doubles import ScriptedLLM, text_response
from tools.base import Caller, Tool, ToolContext
from tools.executor import ToolExecutor
from tools.factory import build_registry

CUSTOMER = Caller(key=20, chat_id=10)


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Done(BaseModel):
    done: bool


async def _never(args: _NoArgs, context: ToolContext) -> _Done:
    raise AssertionError("not called in these tests")


def _service(db: Database, llm: ScriptedLLM, *, guide: bool, shop_does: list[bool]) -> ChatService:
    registry = build_registry()
    registry.register(
        Tool(
            name="propose_gift_wrap",
            description="Propose wrapping the customer's order as a gift. They confirm a card.",
            arguments_model=_NoArgs,
            result_model=_Done,
            handler=_never,
            read_only=False,
            offered=lambda: shop_does[0],
        )
    )
    loop = BoundedToolLoop(llm, registry, ToolExecutor(registry), max_steps=3)
    return build_chat_service(
        db=db,
        loop=loop,
        model=llm,
        prompts=build_prompt_registry(),
        shop=ShopRepository(db),
        options=ChatOptions(shop_name="Кофейный двор", tool_guide=guide),
    )


async def _instruction_and_ref(
    service: ChatService, llm: ScriptedLLM, db: Database
) -> tuple[str, str]:
    reply = await service.answer(CUSTOMER, "Здравствуйте!")
    assert reply.answered
    turn = await db.fetch_one("SELECT prompt FROM turns WHERE id = ?", (reply.turn_id,))
    assert turn is not None
    system = llm.chat_requests[-1].messages[0]
    assert system["role"] == "system"
    return str(system["content"]), str(turn["prompt"])


async def test_with_the_guide_the_instruction_names_each_offered_tool_by_its_own_words(
    db: Database,
) -> None:
    llm = ScriptedLLM.from_responses(text_response("Здравствуйте!"), text_response("Привет!"))
    shop_does = [False]
    service = _service(db, llm, guide=True, shop_does=shop_does)
    try:
        text, ref = await _instruction_and_ref(service, llm, db)
        assert ref == "support_chat@5+tool_guide@3"
        assert text.startswith(service.instruction.text)
        guide = text[len(service.instruction.text) :]
        # every tool the model is offered, with the first sentence of its description
        assert "- get_order_status: the status of one of the customer's orders" in guide
        assert "known_topics" not in guide  # get_shop_info's second sentence
        for name in ("get_return_policy", "get_shop_info"):
            assert f"- {name}: " in guide
        # no tool hands the chat to a person here, so such requests are not its job
        assert "never refuse them" in guide and "a request for a person" not in guide
        # an action the shop does not carry out is not named, so never suggested
        assert "propose_gift_wrap" not in guide

        shop_does[0] = True  # the shop now says it wraps gifts
        text, _ = await _instruction_and_ref(service, llm, db)
        assert "- propose_gift_wrap: propose wrapping the customer's order as a gift" in text
        assert "confirm a card" not in text
    finally:
        await service.aclose()


async def test_without_the_guide_the_instruction_names_no_tool(db: Database) -> None:
    llm = ScriptedLLM.from_responses(text_response("Здравствуйте!"))
    service = _service(db, llm, guide=False, shop_does=[True])
    try:
        text, ref = await _instruction_and_ref(service, llm, db)
        assert (text, ref) == (service.instruction.text, "support_chat@5")
        assert "get_order_status" not in text and "propose_gift_wrap" not in text
    finally:
        await service.aclose()


def test_a_request_for_a_person_is_named_only_beside_a_tool_that_hands_over() -> None:
    handoff = ("request_human", "Hand the chat over to a person from the shop's team.")
    order = ("get_order_status", "The status of one order.")
    assert "a request for a person" in guide_text([order, handoff])
    assert "a request for a person" not in guide_text([order])
    assert guide_text([]) == ""
