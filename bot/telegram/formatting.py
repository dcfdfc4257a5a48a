"""The model's Markdown → Telegram HTML, split into messages Telegram accepts.

Models write a small, predictable Markdown subset: **bold**, *italic* / _italic_,
`inline code`, fenced code blocks, ~~strike~~, [links](https://…), bullet and numbered
lists, `#` headings. Everything is converted with aiogram's HTML decoration and every
other character is escaped, so the text can never produce a tag Telegram rejects.
Markers that do not pair up stay as literal text rather than guessing. A link always
shows its target next to its text (`_render_link`): the text is not the shop's to vouch
for.

Each message is produced twice, as HTML and as its visible plain text, from the same
walk, so when Telegram refuses the formatting the same words go out unformatted.
Answers longer than Telegram's 4096 UTF-16 units are split between paragraphs, else
between lines, and only a single over-long line is cut mid-line — always between
complete tags, because each line is converted on its own.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from aiogram.utils.text_decorations import html_decoration

from bot.runtime.channel import Rendered as Rendered

TELEGRAM_TEXT_LIMIT = 4096

_FENCE_RE = re.compile(r"^\s*(```|~~~)\s*([\w+#.-]*)\s*$")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET_RE = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED_RE = re.compile(r"^(\s*)(\d{1,3})[.)]\s+(.*)$")
_RULE_RE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_QUOTE_RE = re.compile(r"^\s*>\s?(.*)$")

_INLINE_RE = re.compile(
    r"(?P<code>`(?P<code_body>[^`\n]+)`)"
    r"|(?P<link>\[(?P<link_text>[^\]\n]+)\]\((?P<link_url>https?://[^\s()]+)\))"
    r"|(?P<bold>\*\*(?P<bold_body>\S(?:.*?\S)?)\*\*)"
    r"|(?P<bold2>(?<!\w)__(?P<bold2_body>\S(?:.*?\S)?)__(?!\w))"
    r"|(?P<strike>~~(?P<strike_body>\S(?:.*?\S)?)~~)"
    r"|(?P<italic>(?<![\w*])\*(?P<italic_body>[^\s*](?:[^*\n]*?[^\s*])?)\*(?![\w*]))"
    r"|(?P<italic2>(?<![\w_])_(?P<italic2_body>[^\s_](?:[^_\n]*?[^\s_])?)_(?![\w_]))"
)


EMPTY = Rendered("", "")


def utf16_len(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def escape_html(text: str) -> Rendered:
    """Plain text as a message: nothing is interpreted as formatting."""
    return Rendered(html_decoration.quote(text), text)


def render_inline(text: str) -> Rendered:
    """Convert one line's inline Markdown; unpaired markers stay literal."""
    out = EMPTY
    pos = 0
    for match in _INLINE_RE.finditer(text):
        out += escape_html(text[pos : match.start()])
        out += _render_match(match)
        pos = match.end()
    return out + escape_html(text[pos:])


def _render_match(match: re.Match[str]) -> Rendered:
    if match["code"] is not None:
        body = match["code_body"]
        return Rendered(html_decoration.code(html_decoration.quote(body)), body)
    if match["link"] is not None:
        return _render_link(render_inline(match["link_text"]), match["link_url"])
    for name, wrap in (
        ("bold", html_decoration.bold),
        ("bold2", html_decoration.bold),
        ("strike", html_decoration.strikethrough),
        ("italic", html_decoration.italic),
        ("italic2", html_decoration.italic),
    ):
        if match[name] is not None:
            inner = render_inline(match[f"{name}_body"])
            return Rendered(wrap(inner.html), inner.plain)
    raise AssertionError(f"unexpected inline match {match.lastgroup}")  # pragma: no cover


def _render_link(inner: Rendered, url: str) -> Rendered:
    """A link with its target in plain sight: "text (https://target)".

    The text of a Markdown link is the model's (or the imported shop data's) to choose,
    so `[Pay here](https://evil.example/pay)` would hide where it leads; the customer
    sees the address before they tap it. A host in another script is shown in its ASCII
    form (punycode), so a look-alike of the shop's domain shows what it is.
    """
    target = _visible_url(url)
    anchor = html_decoration.link(html_decoration.quote(target), html.escape(target, quote=True))
    if inner.plain.strip() in (url, target, url.split("://", 1)[-1].rstrip("/")):
        return Rendered(anchor, target)
    return Rendered(f"{inner.html} ({anchor})", f"{inner.plain} ({target})")


def _visible_url(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host.isascii():
        return url
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:  # not a name IDNA can spell: show the escaped form
        ascii_host = host.encode("ascii", "backslashreplace").decode("ascii")
    userinfo, at, _ = parts.netloc.rpartition("@")
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:  # not a port number: the host is what matters here
        port = ""
    return urlunsplit(parts._replace(netloc=f"{userinfo}{at}{ascii_host}{port}"))


def _render_line(line: str) -> Rendered:
    if _RULE_RE.match(line):
        return Rendered("———", "———")
    if heading := _HEADING_RE.match(line):
        inner = render_inline(heading[1])
        return Rendered(html_decoration.bold(inner.html), inner.plain)
    if bullet := _BULLET_RE.match(line):
        indent = "  " * (len(bullet[1].expandtabs(4)) // 2)
        return escape_html(f"{indent}• ") + render_inline(bullet[2])
    if numbered := _NUMBERED_RE.match(line):
        indent = "  " * (len(numbered[1].expandtabs(4)) // 2)
        return escape_html(f"{indent}{numbered[2]}. ") + render_inline(numbered[3])
    if quote := _QUOTE_RE.match(line):
        return escape_html("│ ") + render_inline(quote[1])
    return render_inline(line.rstrip())


@dataclass(frozen=True, slots=True)
class _Block:
    """A paragraph (lines of text) or a code block; the unit the splitter keeps whole."""

    lines: tuple[str, ...]
    code_language: str | None = None  # "" for a code block without a language

    @property
    def is_code(self) -> bool:
        return self.code_language is not None


def _blocks(markdown: str) -> list[_Block]:
    blocks: list[_Block] = []
    paragraph: list[str] = []
    code: list[str] | None = None
    fence = ""
    language = ""

    def close_paragraph() -> None:
        if paragraph:
            blocks.append(_Block(tuple(paragraph)))
            paragraph.clear()

    for line in markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        fence_match = _FENCE_RE.match(line)
        if code is not None:
            if fence_match and fence_match[1] == fence and not fence_match[2]:
                blocks.append(_Block(tuple(code), language))
                code = None
            else:
                code.append(line)
        elif fence_match:
            close_paragraph()
            code, fence, language = [], fence_match[1], fence_match[2]
        elif line.strip():
            paragraph.append(line)
        else:
            close_paragraph()
    if code is not None:  # an unclosed fence: still show it as code
        blocks.append(_Block(tuple(code), language))
    close_paragraph()
    return blocks


def _render_code(lines: list[str], language: str) -> Rendered:
    body = "\n".join(lines)
    quoted = html_decoration.quote(body)
    if language:
        code_tag = f'<code class="language-{html.escape(language, quote=True)}">{quoted}</code>'
        return Rendered(f"<pre>{code_tag}</pre>", body)
    return Rendered(html_decoration.pre(quoted), body)


def _hard_split(text: str, limit: int) -> list[str]:
    """Cut one over-long line into pieces whose escaped HTML fits `limit` UTF-16 units."""
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for char in text:
        width = utf16_len(html_decoration.quote(char))
        if size + width > limit and current:
            pieces.append("".join(current))
            current, size = [], 0
        current.append(char)
        size += width
    if current:
        pieces.append("".join(current))
    return pieces


def _pieces(block: _Block, limit: int) -> list[Rendered]:
    """The block as one piece if it fits, else line groups that each fit."""
    if block.is_code:
        whole = _render_code(list(block.lines), block.code_language or "")
    else:
        whole = _join([_render_line(line) for line in block.lines], "\n")
    if utf16_len(whole.html) <= limit:
        return [whole]
    pieces: list[Rendered] = []
    group: list[str] = []
    for line in block.lines:
        candidate = [*group, line]
        rendered = _render_group(block, candidate)
        if utf16_len(rendered.html) <= limit:
            group = candidate
            continue
        if group:
            pieces.append(_render_group(block, group))
            group = []
        single = _render_group(block, [line])
        if utf16_len(single.html) <= limit:
            group = [line]
            continue
        # one line longer than a message: cut it as escaped plain text (code stays code)
        overhead = utf16_len(_render_code([""], block.code_language or "").html)
        room = max(1, limit - overhead) if block.is_code else limit
        for part in _hard_split(line, room):
            if block.is_code:
                pieces.append(_render_code([part], block.code_language or ""))
            else:
                pieces.append(escape_html(part))
    if group:
        pieces.append(_render_group(block, group))
    return pieces


def _render_group(block: _Block, lines: list[str]) -> Rendered:
    if block.is_code:
        return _render_code(lines, block.code_language or "")
    return _join([_render_line(line) for line in lines], "\n")


def _join(parts: list[Rendered], separator: str) -> Rendered:
    return Rendered(separator.join(p.html for p in parts), separator.join(p.plain for p in parts))


def markdown_to_messages(markdown: str, *, limit: int = TELEGRAM_TEXT_LIMIT) -> list[Rendered]:
    """Telegram-ready messages for one answer, each within `limit` UTF-16 units as HTML.

    The HTML length bounds the visible length too, so the plain fallback also fits.
    """
    messages: list[Rendered] = []
    current: list[Rendered] = []
    for block in _blocks(markdown):
        for piece in _pieces(block, limit):
            candidate = _join([*current, piece], "\n\n")
            if current and utf16_len(candidate.html) > limit:
                messages.append(_join(current, "\n\n"))
                current = [piece]
            else:
                current.append(piece)
    if current:
        messages.append(_join(current, "\n\n"))
    return [m for m in messages if m.plain.strip()]


def messages_under_heading(heading: Rendered, markdown: str) -> list[Rendered]:
    """`markdown_to_messages(markdown)` with `heading` (already rendered) and a blank line
    before the first message, every message still within Telegram's limit."""
    separator = Rendered("\n\n", "\n\n")
    room = TELEGRAM_TEXT_LIMIT - utf16_len(heading.html) - utf16_len(separator.html)
    parts = markdown_to_messages(markdown, limit=max(room, 1))
    if not parts:
        return [heading]
    return [heading + separator + parts[0], *parts[1:]]
