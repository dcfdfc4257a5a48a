"""A web page's main text: what a reader came for, without the site's furniture.

Parsed with selectolax (lexbor, a fast HTML5 parser). The main part is `<main>`, else
`<article>`, else `[role=main]`, else the body; navigation, headers and footers outside
it, sidebars, forms, scripts and cookie/consent banners are dropped. What remains is
walked in order: headings open sections (h1–h6: the heading path), paragraphs are
blocks, a list item is "- item", a table row "cell | cell", so lists and tables stay
readable. Blocks repeated across a site's pages (a shared footer the markup does not
mark) are dropped by the crawl (tools/knowledge/sync.py), which sees every page.
The text is decoded by the declared charset (HTTP header, then <meta>), else UTF-8,
else Windows-1251 (the common legacy charset of Russian sites).
"""

from __future__ import annotations

import codecs
import re
from urllib.parse import urldefrag, urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode

from tools.knowledge.documents import ParsedDocument, SectionBuilder, clean

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {"p", "blockquote", "pre", "dd", "dt", "figcaption", "address", "li", "summary"}
_NESTED = "p, div, section, article, h1, h2, h3, h4, h5, h6, ul, ol, table, blockquote, pre, dl"
_ALWAYS_DROPPED = (
    "script, style, noscript, template, svg, iframe, form, button, select, nav, aside,"
    " [role=navigation], [role=complementary], [role=search], [aria-hidden=true], [hidden],"
    " dialog"
)
_OUTSIDE_MAIN_DROPPED = "header, footer, [role=banner], [role=contentinfo]"
# id/class words of blocks that are not the page's content
_JUNK = re.compile(
    r"cookie|consent|gdpr|breadcrumb|sidebar|newsletter|subscribe|popup|modal|share|social"
    r"|navbar|menu|banner-ad|advert",
    re.IGNORECASE,
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def decode_html(data: bytes, declared: str | None = None) -> str:
    """The page's text: its declared charset, else UTF-8, else Windows-1251."""
    candidates = [declared] if declared else []
    meta = _META_CHARSET.search(data[:4096])
    if meta:
        candidates.append(meta.group(1).decode("ascii", "replace"))
    for name in candidates:
        try:
            codecs.lookup(name)
            return data.decode(name, errors="replace")
        except LookupError:
            continue
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1251", errors="replace")


def _main(tree: LexborHTMLParser) -> tuple[LexborNode | None, bool]:
    for selector in ("main", "article", "[role=main]"):
        node = tree.css_first(selector)
        if node is not None:
            return node, True
    return tree.body, False


def _drop_junk(root: LexborNode, *, is_main: bool) -> None:
    selectors = _ALWAYS_DROPPED if is_main else f"{_ALWAYS_DROPPED}, {_OUTSIDE_MAIN_DROPPED}"
    for node in root.css(selectors):
        node.decompose()
    for node in root.css("[class], [id]"):
        marks = f"{node.attributes.get('class') or ''} {node.attributes.get('id') or ''}"
        if node.tag not in ("body", "main", "article") and _JUNK.search(marks):
            node.decompose()


def _text(node: LexborNode) -> str:
    # text nodes carry their own spaces: "за <b>300 ₽</b>." stays "за 300 ₽."
    for br in node.css("br"):
        br.replace_with(" ")
    return clean(node.text(deep=True, separator=""))


def _table(node: LexborNode, out: SectionBuilder) -> None:
    for row in node.css("tr"):
        cells = [_text(c) for c in row.iter() if c.tag in ("td", "th")]
        if any(cells):
            out.block(" | ".join(cells))


def _list(node: LexborNode, out: SectionBuilder) -> None:
    for item in node.iter():
        if item.tag == "li":
            text = _text(item)
            if text:
                out.block(f"- {text}")


def _walk(node: LexborNode, out: SectionBuilder) -> None:
    inline: list[str] = []

    def flush() -> None:
        if inline:
            out.block("".join(inline))
            inline.clear()

    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            inline.append(child.text(deep=False))
        elif tag in _HEADINGS:
            flush()
            out.heading(_HEADINGS[tag], _text(child))
        elif tag in ("ul", "ol"):
            flush()
            _list(child, out)
        elif tag == "table":
            flush()
            _table(child, out)
        elif tag in _BLOCKS:
            flush()
            out.block(_text(child))
        elif tag == "br":
            flush()
        elif child.css_matches(_NESTED):
            flush()
            _walk(child, out)
        else:
            inline.append(_text(child))
    flush()


def _links(tree: LexborHTMLParser, url: str) -> list[str]:
    base_node = tree.css_first("base[href]")
    base = urljoin(url, base_node.attributes.get("href") or "") if base_node else url
    found: dict[str, None] = {}
    for anchor in tree.css("a[href]"):
        href = (anchor.attributes.get("href") or "").strip()
        if not href or href.startswith(("mailto:", "tel:", "javascript:")):
            continue
        absolute = urldefrag(urljoin(base, href))[0]
        if absolute.startswith(("http://", "https://")):
            found[absolute] = None
    return list(found)


def read_html(text: str, url: str = "") -> ParsedDocument:
    """The page's title, main text in sections, and its links (absolute, for a crawl)."""
    tree = LexborHTMLParser(text)
    links = _links(tree, url) if url else []
    title_node = tree.css_first("title")
    title = _text(title_node) if title_node is not None else ""
    root, is_main = _main(tree)
    out = SectionBuilder()
    if root is not None:
        _drop_junk(root, is_main=is_main)
        _walk(root, out)
    sections = out.result()
    if not title:
        first = next((s.headings[0] for s in sections if s.headings), "")
        title = first or url
    return ParsedDocument(title=title, sections=sections, links=links)
