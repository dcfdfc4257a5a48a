"""Tool calls a model wrote as text, and the bot's own scaffolding, found in its reply.

Small local models often "call" a tool by writing the call into the message instead of
using the tool-calling interface: bare JSON (`{"name": "get_order_status", "arguments":
{...}}`), the same in a ```json fence, Hermes/Qwen `<tool_call>` tags, `<function=NAME>`
markup (or `<function name=… arguments='{…}'/>`), a Python-style
`get_order_status(order_id="8041")`. They also echo the prompt's scaffolding: a
`<conversation_summary>` block, `<tool_response>` tags, chat-template tokens
(`<|im_start|>`), or the tool schemas themselves. None of that may reach a customer.
`scan` finds all of it in one text and says:

* `calls` — the calls it could read (a tool name and a JSON object of arguments; whether
  the name is offered and the arguments are valid is the executor's decision, as for a
  structured call);
* `markup` — the kinds of scaffolding found (empty: the text is a plain answer);
* `clean` — the text with every recognised piece removed.

`visible_draft` is the streaming counterpart: the part of a partly written answer that
can be shown before a piece of markup could be starting (a draft is cut at the first
`{`, fence or tag, since the rest of such a piece has not arrived yet).

Limits: prose that describes a call ("you can call the `get_order_status` function", as
Qwen2.5-Coder wrote) is not markup — marking it made a model reciting the instruction
(which names the tools) be asked again instead of withheld at once; JSON that neither
names a tool nor has a call's, a schema's or an error's shape is left in the text.
"""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

# Tags of the prompts' data blocks and of chat templates' tool protocols: a block of one
# of them is removed with its content, a stray opening or closing tag on its own.
INTERNAL_TAGS = (
    "conversation_summary",
    "previous_summary",
    "messages",
    "tool_call",
    "tool_calls",
    "tool_response",
    "tool_result",
    "tools",
    "function_call",
    "functioncall",
)
_BLOCK_RE = re.compile(
    r"<\s*(" + "|".join(INTERNAL_TAGS) + r")(?![\w-])[^<>]*>(.*?)<\s*/\s*\1\s*>",
    re.IGNORECASE | re.DOTALL,
)
_STRAY_TAG_RE = re.compile(
    r"<\s*/?\s*(?:" + "|".join(INTERNAL_TAGS) + r")(?![\w-])[^<>]*>", re.IGNORECASE
)
# <function=NAME>{...}</function>, <function name="NAME">{...}</function>
_FUNCTION_TAG_RE = re.compile(
    r"<\s*function\s*(?:=\s*|\s+name\s*=\s*)[\"']?([\w.-]+)[\"']?\s*>(.*?)(?:<\s*/\s*function\s*>|$)",
    re.IGNORECASE | re.DOTALL,
)
# <function name="NAME" arguments='{...}'/> (Qwen2.5-Coder inside <tools>), closed or not
_FUNCTION_ATTRIBUTES_RE = re.compile(
    r"<\s*function\s+name\s*=\s*[\"']([\w.-]+)[\"']\s+(?:arguments|parameters|args)\s*=\s*"
    r"(?:'([^']*)'|\"([^\"]*)\")\s*/?\s*>(?:\s*<\s*/\s*function\s*>)?",
    re.IGNORECASE | re.DOTALL,
)
# chat-template and tool-protocol tokens: <|im_start|>, <|python_tag|>, [TOOL_CALLS] ...
_TOKEN_RE = re.compile(r"<\|[\w.-]{1,40}\|>|\[/?(?:TOOL_CALLS|TOOL_RESULTS|AVAILABLE_TOOLS)\]")
_FENCE_RE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "params")
_NAME_KEYS = ("name", "tool", "tool_name", "function", "function_name")
# what remains of a text whose calls were removed, when nothing is left to read
_NO_WORDS_RE = re.compile(r"^[\W_]*$")
# where a streamed draft must stop: something that could start a piece of markup
_DRAFT_CUT_RE = re.compile(r"```|\{|<\s*[/|\w!]|\[(?:TOOL|/?AVAILABLE)")


@dataclass(frozen=True, slots=True)
class TextCall:
    """One call read from text: the tool's name and its arguments as JSON object text."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Scan:
    calls: tuple[TextCall, ...]
    markup: tuple[str, ...]
    clean: str

    @property
    def found(self) -> bool:
        return bool(self.markup)

    @property
    def has_words(self) -> bool:
        """Whether the clean text still says something (not only brackets and spaces)."""
        return not _NO_WORDS_RE.match(self.clean)


def scan(text: str, tool_names: Collection[str]) -> Scan:
    """Every tool call and piece of scaffolding in `text` (see the module docstring)."""
    found = _Found(frozenset(tool_names))
    rest = _TOKEN_RE.sub(lambda m: found.mark("template_token"), text)
    rest = _FUNCTION_ATTRIBUTES_RE.sub(found.function_attributes, rest)
    rest = _FUNCTION_TAG_RE.sub(found.function_tag, rest)
    rest = _BLOCK_RE.sub(found.block, rest)
    rest = _STRAY_TAG_RE.sub(lambda m: found.mark("internal_tag"), rest)
    rest = _FENCE_RE.sub(found.fence, rest)
    rest = found.json_objects(rest)
    rest = found.python_calls(rest)
    clean = re.sub(r"[ \t]+\n", "\n", rest)
    clean = re.sub(r"\n{3,}", "\n\n", clean).strip()
    return Scan(calls=tuple(found.calls), markup=tuple(dict.fromkeys(found.kinds)), clean=clean)


def visible_draft(text: str) -> str:
    """The part of a streamed draft that may be shown: up to the first place where a
    tool call or tag could be starting (the final answer is screened whole)."""
    cut = _DRAFT_CUT_RE.search(text)
    return (text if cut is None else text[: cut.start()]).rstrip()


class _Found:
    """What `scan` collects while it removes the pieces it recognises."""

    def __init__(self, tool_names: frozenset[str]) -> None:
        self.tool_names = tool_names
        self.calls: list[TextCall] = []
        self.kinds: list[str] = []

    def mark(self, kind: str) -> str:
        self.kinds.append(kind)
        return " "

    def function_tag(self, match: re.Match[str]) -> str:
        arguments = _json_object(match[2].strip()) if match[2].strip() else {}
        self.calls.append(TextCall(match[1], "null" if arguments is None else _dumps(arguments)))
        return self.mark("function_tag")

    def function_attributes(self, match: re.Match[str]) -> str:
        """`<function name=… arguments='…'/>`: the arguments in single quotes are JSON as
        written; in double quotes the model may have written `&quot;` for a quote."""
        raw = match[2] if match[2] is not None else html.unescape(match[3] or "")
        arguments = _json_object(raw.strip()) if raw.strip() else {}
        self.calls.append(TextCall(match[1], "null" if arguments is None else _dumps(arguments)))
        return self.mark("function_tag")

    def block(self, match: re.Match[str]) -> str:
        """A tagged block: the calls in it are read whatever the tag (Qwen2.5 wrote its
        calls inside `<tools>` as often as inside `<tool_call>`), the block removed."""
        before = len(self.calls)
        self.json_objects(match[2])
        self.python_calls(match[2])
        return self.mark("tool_call_tag" if len(self.calls) > before else "internal_tag")

    def fence(self, match: re.Match[str]) -> str:
        body = match[1].strip()
        try:
            json.loads(body)
        except (ValueError, RecursionError):
            call = self._python_call(body)
            if call is not None:
                self.calls.append(call)
                return self.mark("fenced_call")
            if body.startswith(("{", "[")):  # broken JSON is no answer either
                return self.mark("fenced_json")
            return match[0]
        before, kinds = len(self.calls), len(self.kinds)
        self.json_objects(body)
        if len(self.calls) == before and len(self.kinds) == kinds:
            self.kinds.append("fenced_json")  # JSON is never an answer for a customer
        return " "

    def json_objects(self, text: str) -> str:
        """`text` with every JSON object that is a call or a tool schema removed."""
        decoder = json.JSONDecoder()
        out: list[str] = []
        position = 0
        for start in _braces(text):
            if start < position:
                continue
            try:
                value, end = decoder.raw_decode(text, start)
            except ValueError:
                continue
            kind = self._classify(value)
            if kind is None:
                continue
            out.append(text[position:start])
            self.kinds.append(kind)
            position = end
        out.append(text[position:])
        return " ".join(part for part in out if part) if len(out) > 1 else text

    def python_calls(self, text: str) -> str:
        """`text` with every `tool_name(...)` of an offered tool removed."""
        if not self.tool_names:
            return text
        names = "|".join(re.escape(name) for name in sorted(self.tool_names, key=len)[::-1])
        pieces: list[str] = []
        position = 0
        for match in re.finditer(rf"\b({names})\s*\(", text):
            if match.start() < position:
                continue
            end = _closing_paren(text, match.end() - 1)
            if end is None:
                continue
            call = self._python_call(text[match.start() : end + 1])
            pieces.append(text[position : match.start()])
            self.calls.append(call or TextCall(match[1], "null"))
            self.kinds.append("python_call")
            position = end + 1
        pieces.append(text[position:])
        return "".join(pieces)

    def _python_call(self, source: str) -> TextCall | None:
        try:
            node = ast.parse(source.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return None
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            return None
        if node.func.id not in self.tool_names:
            return None
        try:
            if not node.keywords and len(node.args) == 1:
                value = ast.literal_eval(node.args[0])
                arguments = value if isinstance(value, dict) else None
            elif not node.args and all(k.arg for k in node.keywords):
                arguments = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
            else:
                arguments = None
        except (ValueError, TypeError, SyntaxError, RecursionError):
            arguments = None
        return TextCall(node.func.id, "null" if arguments is None else _dumps(arguments))

    def _classify(self, value: object) -> str | None:
        """ "text_call" (recorded), "tool_schema", "tool_json", or None (not ours)."""
        if isinstance(value, list):
            kinds = [self._classify(item) for item in value]
            return next((k for k in kinds if k is not None), None)
        if not isinstance(value, dict):
            return None
        call = self._call(value)
        if call is not None:
            self.calls.append(call)
            return "text_call"
        if _is_schema(value):
            return "tool_schema"
        if _is_tool_result(value):
            return "tool_result"
        if any(key in self.tool_names for key in value) or any(
            isinstance(v, str) and v in self.tool_names for v in value.values()
        ):
            return "tool_json"
        return None

    def _call(self, value: dict[str, object]) -> TextCall | None:
        if _is_schema(value):
            return None
        inner = value.get("function")
        if isinstance(inner, dict):  # {"type": "function", "function": {...}}
            return self._call(inner)
        name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
        arguments = next((value[k] for k in _ARGUMENT_KEYS if k in value), None)
        if isinstance(name, str) and name and arguments is not None:
            if isinstance(arguments, str):  # arguments as JSON text, as the API sends them
                arguments = _json_object(arguments) if arguments.strip() else {}
            return TextCall(name, "null" if arguments is None else _dumps(arguments))
        if isinstance(name, str) and name in self.tool_names and len(value) == 1:
            return TextCall(name, "{}")
        if len(value) == 1:  # {"get_order_status": {"order_id": "8041"}}
            ((key, only),) = value.items()
            if key in self.tool_names and isinstance(only, dict):
                return TextCall(key, _dumps(only))
        return None


def _is_schema(value: dict[str, object]) -> bool:
    """A tool's schema: parameters described with JSON Schema words."""
    parameters = value.get("parameters")
    if isinstance(parameters, dict) and ("properties" in parameters or "type" in parameters):
        return "description" in value or "name" in value
    inner = value.get("function")
    return isinstance(inner, dict) and _is_schema(inner)


def _is_tool_result(value: dict[str, object]) -> bool:
    """The shape of a tool's or the loop's error (tools/executor.py, services/loop.py):
    `{"ok": false, "error": {"code": ...}}` — a model echoing the correction it got.
    (A successful result's data is shop data the answer may quote; not matched.)"""
    error = value.get("error")
    return value.get("ok") is False and isinstance(error, dict) and "code" in error


def _json_object(text: str) -> dict[str, object] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _braces(text: str) -> Iterator[int]:
    """Where a JSON object or array may start."""
    for match in re.finditer(r"[{\[]", text):
        yield match.start()


def _closing_paren(text: str, opening: int, limit: int = 2000) -> int | None:
    """The index of the parenthesis closing the one at `opening` (quotes respected)."""
    depth, quote = 0, ""
    for index in range(opening, min(len(text), opening + limit)):
        char = text[index]
        if quote:
            if char == quote and text[index - 1] != "\\":
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
    return None
