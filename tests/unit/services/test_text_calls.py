"""Tool calls written as text: recognised in every form, never delivered, read when safe
(the same executor and audit as a structured call), repeats answered from the first
result. The forms are what small local models were seen to write (docs/simulations.md).
"""

from __future__ import annotations

import json

import pytest

from services.answer_stream import DraftRelay
from services.llm.types import Message, ToolChoice
from services.loop import ANSWER_NOW, TEXT_CALL_CODE, BoundedToolLoop, result_note
from services.loop_types import ProtocolError, StopReason
from services.text_calls import scan, visible_draft
from storage.records import AuditStatus
from tests.doubles import (
    ScriptedLLM,
    assert_tool_messages_paired,
    text_response,
    tool_call,
    tool_calls_response,
)
from tests.unit.services.loop_helpers import FakeTools, context
from tools.base import ActionProposed, ToolContext

PROMPT = "support_chat@3"
USER: list[Message] = [
    {"role": "system", "content": "rules"},
    {"role": "user", "content": "Где мой ключ x?"},
]
NAMES = ("lookup", "wait")
CALL = '{"name": "lookup", "arguments": {"key": "x"}}'

# every form seen or documented for "a call written as text", as the model sends it
FORMS = {
    "bare JSON": CALL,
    "fenced JSON": f"Сейчас проверю.\n```json\n{CALL}\n```",
    "fence without a language": f"```\n{CALL}\n```",
    "arguments as a JSON string": '{"name": "lookup", "arguments": "{\\"key\\": \\"x\\"}"}',
    "parameters key": '{"name": "lookup", "parameters": {"key": "x"}}',
    "OpenAI shape": (
        '{"type": "function", "function": {"name": "lookup", "arguments": {"key": "x"}}}'
    ),
    "a list of calls": f"[{CALL}]",
    "tool name as the key": '{"lookup": {"key": "x"}}',
    "tool_call tags": f"<tool_call>\n{CALL}\n</tool_call>",
    "tools tags": f"<tools>\n{CALL}\n</tools>",
    "unclosed tool_call tag": f"<tool_call>\n{CALL}",
    "function tag": '<function=lookup>{"key": "x"}</function>',
    "function name attribute": '<function name="lookup">{"key": "x"}</function>',
    "function with an arguments attribute": (
        '<tools>\n  <function name="lookup" arguments=\'{"key": "x"}\'/>\n</tools>'
    ),
    "arguments attribute in double quotes": (
        '<function name="lookup" arguments="{&quot;key&quot;: &quot;x&quot;}"></function>'
    ),
    "Python call": 'lookup(key="x")',
    "Python call in a fence": '```python\nlookup(key="x")\n```',
    "prose around JSON": f"Проверяю ключ {CALL} минутку",
}


def make_loop(llm: ScriptedLLM, tools: FakeTools, **kwargs: object) -> BoundedToolLoop:
    return BoundedToolLoop(llm, tools.registry, tools.executor, **kwargs)  # type: ignore[arg-type]


def tool_results(messages: list[Message]) -> list[dict[str, object]]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def writes_then_answers(written: str):  # type: ignore[no-untyped-def]
    """A small model: writes `written` until a tool result is in, then answers from it."""

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        results = tool_results(messages)
        if results:
            return text_response(f"Готово: {results[-1]['data']['value']}")  # type: ignore[index]
        return text_response(written)

    return script


@pytest.mark.parametrize("form", FORMS)
def test_every_form_is_recognised_as_a_call_of_the_tool(form: str) -> None:
    found = scan(FORMS[form], NAMES)
    assert found.found
    assert [(c.name, json.loads(c.arguments)) for c in found.calls] == [("lookup", {"key": "x"})]
    assert "lookup" not in found.clean and "{" not in found.clean


@pytest.mark.parametrize(
    "text",
    [
        "Ваш заказ 8041 в пути, курьер привезёт его завтра.",
        "Order 8041: shipped (tracking 1Z999).",
        'He said "hello" to me [twice] {sic}.',
        "Цена: 2 500 ₽, доставка 3–5 дней; 10 % скидка.",
        'A JSON-looking note {"name": "Ivan"} about a person is not a call.',
    ],
)
def test_ordinary_answers_are_left_alone(text: str) -> None:
    found = scan(text, NAMES)
    assert not found.found and found.calls == () and found.clean == text


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Ответ.\n<conversation_summary>Клиент спросил</conversation_summary>", "internal_tag"),
        ("Ответ.</conversation_summary>", "internal_tag"),
        ("<|im_start|>assistant\nОтвет.", "template_token"),
        (
            '[{"type": "function", "function": {"name": "lookup", "description": "Look a '
            'key up.", "parameters": {"type": "object", "properties": {"key": {}}}}}]',
            "tool_schema",
        ),
        ('```json\n{"order_id": "8041"}\n```', "fenced_json"),
        ('<tool_response>{"ok": true}</tool_response>', "internal_tag"),
        (
            '{"ok": false, "error": {"code": "text_tool_call", "message": "Your last '
            'message was not shown"}}',
            "tool_result",
        ),
    ],
)
def test_the_bots_own_scaffolding_is_found_and_removed(text: str, kind: str) -> None:
    found = scan(text, NAMES)
    assert kind in found.markup and found.calls == ()
    for leaked in ("conversation_summary", "im_start", "parameters", "order_id", "tool_response"):
        assert leaked not in found.clean


def test_a_draft_is_shown_only_up_to_where_markup_could_begin() -> None:
    assert visible_draft('Секунду, проверяю. {"name": "loo') == "Секунду, проверяю."
    assert visible_draft("Проверяю\n```js") == "Проверяю"
    assert visible_draft("<tool_call>") == ""
    assert visible_draft("Заказ 8041 в пути.") == "Заказ 8041 в пути."

    shown: list[str] = []

    class Sink:
        def show(self, text: str) -> None:
            shown.append(text)

        def thinking(self) -> None:
            shown.append("…")

    relay = DraftRelay(Sink(), leaks=lambda text: False, interval_s=0.0)
    partial = ""
    for piece in ["Проверяю", " ключ. ", '{"name": ', '"lookup", "arguments": {"key": "x"}}']:
        partial += piece
        relay.on_text(partial)
    relay.on_tool_call()
    assert shown == ["Проверяю", "Проверяю ключ.", "…"]


@pytest.mark.parametrize("form", FORMS)
async def test_a_valid_read_only_call_as_text_runs_once_and_is_never_the_answer(
    form: str,
) -> None:
    tools = FakeTools()
    llm = ScriptedLLM(writes_then_answers(FORMS[form]))
    result = await make_loop(llm, tools).run(USER, context(), prompt_ref=PROMPT)

    assert result.text == "Готово: value-of-x" and result.stop_reason is StopReason.COMPLETED
    assert tools.calls == ["lookup:x"] and result.tool_names == ["lookup"]
    [audit] = result.trace.audit_records  # audited like a structured call
    assert audit.status is AuditStatus.SUCCESS and audit.call_id == "text_s1_1"
    # the next step sees it as a structured call with its result, never the raw text
    second = llm.requests[1].messages
    assert_tool_messages_paired(second)
    assert second[-3]["tool_calls"][0]["function"]["name"] == "lookup"
    assert second[-3]["content"] == ""
    # then one line: answer from the results, a "not found" included
    assert second[-1] == {"role": "system", "content": result_note(None)}


async def test_reading_off_the_model_is_told_and_the_call_never_runs() -> None:
    tools = FakeTools()

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "system":
            return text_response("Назовите, пожалуйста, ключ ещё раз.")
        return text_response(CALL)

    llm = ScriptedLLM(script)
    loop = make_loop(llm, tools, read_text_calls=False)
    result = await loop.run(USER, context(), prompt_ref=PROMPT)

    assert result.text == "Назовите, пожалуйста, ключ ещё раз."
    assert tools.calls == [] and result.trace.audit_records == []
    error = json.loads(llm.requests[1].messages[-1]["content"])
    assert error["error"]["code"] == TEXT_CALL_CODE


@pytest.mark.parametrize(
    ("written", "code"),
    [
        ('{"name": "lookup", "arguments": {"key": 5}}', "invalid_arguments"),
        ('{"name": "lookup", "arguments": {"id": "x"}}', "invalid_arguments"),
        ('{"name": "drop_tables", "arguments": {}}', "unknown_tool"),
        ("<function=lookup>not json</function>", "invalid_arguments"),
        ("lookup(x)", "invalid_arguments"),
    ],
)
async def test_an_invalid_call_as_text_gets_a_structured_error_and_runs_nothing(
    written: str, code: str
) -> None:
    tools = FakeTools()

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if tool_results(messages):
            return text_response("Уточните ключ, пожалуйста.")
        return text_response(written)

    llm = ScriptedLLM(script)
    result = await make_loop(llm, tools).run(USER, context(), prompt_ref=PROMPT)

    assert tools.calls == [] and result.text == "Уточните ключ, пожалуйста."
    [error] = tool_results(llm.requests[1].messages)
    assert error["error"]["code"] == code  # type: ignore[index]
    [audit] = result.trace.audit_records
    assert audit.status is AuditStatus.REJECTED


async def test_markup_without_a_call_is_corrected_by_the_model() -> None:
    schema = (
        '[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]'
    )

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if messages[-1]["role"] == "system":
            return text_response("Чем могу помочь?")
        return text_response(schema)

    llm = ScriptedLLM(script)
    result = await make_loop(llm, FakeTools()).run(USER, context(), prompt_ref=PROMPT)
    assert result.text == "Чем могу помочь?"


@pytest.mark.parametrize("form", ["bare JSON", "tool_call tags", "fenced JSON"])
async def test_a_call_as_text_on_the_last_step_ends_the_turn_never_shown(form: str) -> None:
    """The customer gets the bot's polite fallback for a protocol error, not the text."""
    tools = FakeTools()
    llm = ScriptedLLM(lambda messages, choice: text_response(FORMS[form]))
    with pytest.raises(ProtocolError) as caught:
        await make_loop(llm, tools, max_steps=1).run(USER, context(), prompt_ref=PROMPT)
    assert "as text" in str(caught.value) and tools.calls == []


async def test_a_turn_that_only_writes_calls_ends_in_the_fallback_after_its_steps() -> None:
    tools = FakeTools()
    llm = ScriptedLLM(lambda messages, choice: text_response(CALL))
    with pytest.raises(ProtocolError):
        await make_loop(llm, tools, max_steps=3).run(USER, context(), prompt_ref=PROMPT)
    # the call ran once; the repeat got its result back and made the next step the last
    assert tools.calls == ["lookup:x"] and len(llm.requests) == 3
    assert [r.tool_choice for r in llm.requests] == ["auto", "auto", "none"]


async def test_an_echoed_summary_tag_is_dropped_and_the_answer_delivered() -> None:
    answer = "Ваш ключ найден.\n<conversation_summary>Клиент искал ключ</conversation_summary>"
    llm = ScriptedLLM.from_responses(text_response(answer))
    result = await make_loop(llm, FakeTools()).run(USER, context(), prompt_ref=PROMPT)
    assert result.text == "Ваш ключ найден." and len(llm.requests) == 1


@pytest.mark.parametrize("as_text", [False, True])
async def test_a_repeated_call_gets_the_earlier_result_and_the_next_step_answers(
    as_text: bool,
) -> None:
    """The same call twice (Qwen2.5 did this after reading the result): it runs once,
    the repeat gets the same result with the instruction to answer now, and the step
    after it offers no tools — the turn does not burn its steps on repeats."""
    tools = FakeTools()

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if tool_choice == "none":
            return text_response("Ключ x: value-of-x.")
        if as_text:
            return text_response('{"name": "lookup", "arguments": {"key": "x"}}')
        return tool_calls_response(tool_call("lookup", '{ "key":"x" }'))

    llm = ScriptedLLM(script)
    result = await make_loop(llm, tools, max_steps=5).run(USER, context(), prompt_ref=PROMPT)

    assert result.text == "Ключ x: value-of-x."
    assert tools.calls == ["lookup:x"] and result.tool_names == ["lookup"]
    assert [r.tool_choice for r in llm.requests] == ["auto", "auto", "none"]
    first, again = tool_results(llm.requests[2].messages)
    assert again["data"] == first["data"] and again["repeated_call"] == ANSWER_NOW
    assert [a.status for a in result.trace.audit_records] == [
        AuditStatus.SUCCESS,
        AuditStatus.REJECTED,
    ]


async def test_an_action_written_as_text_only_proposes_its_card() -> None:
    """An action tool reached through a text call runs only its proposing handler: a
    card for the customer to press; the turn is suspended, nothing else runs."""
    tools = FakeTools()
    original = tools.registry.get("lookup")
    assert original is not None
    lookup = original.handler

    async def proposing(args: object, tool_context: ToolContext) -> object:
        tool_context.notes.append(ActionProposed(operation_id="a" * 32, effect={"ru": "?"}))
        return await lookup(args, tool_context)  # type: ignore[arg-type]

    object.__setattr__(original, "handler", proposing)

    def script(messages: list[Message], tool_choice: ToolChoice | None):
        if tool_choice == "none":
            return text_response("Проверьте карточку ниже.")
        return text_response(CALL)

    llm = ScriptedLLM(script)
    ctx = context()
    result = await make_loop(llm, tools, max_steps=5).run(USER, ctx, prompt_ref=PROMPT)
    assert result.text == "Проверьте карточку ниже."
    assert [r.tool_choice for r in llm.requests] == ["auto", "none"]
    assert [type(n) for n in ctx.notes] == [ActionProposed] and tools.calls == ["lookup:x"]


async def test_after_results_of_a_text_call_the_model_is_told_to_answer_in_its_language() -> None:
    """The line after a text step's results names the customer's language; a structured
    call's results get no such line (models that use the interface pay nothing)."""
    for as_text in (True, False):
        tools = FakeTools()

        def script(messages: list[Message], tool_choice: ToolChoice | None, text: bool = as_text):
            if tool_results(messages):
                return text_response("Ключ x: value-of-x.")
            if text:
                return text_response(CALL)
            return tool_calls_response(tool_call("lookup", '{"key": "x"}'))

        llm = ScriptedLLM(script)
        loop = make_loop(llm, tools)
        await loop.run(USER, context(), prompt_ref=PROMPT, language="ru")
        last = llm.requests[1].messages[-1]
        if as_text:
            assert last == {"role": "system", "content": result_note("ru")}
            assert "in Russian" in last["content"] and "cannot help" in last["content"]
        else:
            assert last["role"] == "tool"
