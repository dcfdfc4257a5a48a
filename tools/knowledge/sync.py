"""Adding, re-syncing and removing the owner's sources: files, pages and sites.

A source is what the owner added: a file path, a page URL, a sitemap URL, or a site's
root (its sitemap from robots.txt or /sitemap.xml, else its same-host links, crawled
breadth-first up to `max_pages`, robots.txt respected). A sync fetches each document
again: unchanged ones (304 to ETag/Last-Modified, or the same content hash) are not
processed again; changed ones are read, split into passages and embedded; pages gone
from the site (404/410, or no longer in its sitemap or links) are removed. Blocks
repeated on most of a site's pages, or of its pages in one alphabet (a footer the markup
does not mark), are dropped.

All of one source is one transaction (storage/knowledge.py `apply`): bad input (an
unreachable site, a 404, a too-large or scanned PDF, a hostile DOCX, a broken page)
leaves the index as it was and gives one clear line (`SyncReport.error`, kept for
`knowledge list`).
"""

from __future__ import annotations

import asyncio
import html as html_escape
import re
import time
import urllib.robotparser
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

from storage.knowledge import DocumentDraft, DocumentState, SourceRecord
from tools.knowledge.base import KnowledgeBase, content_hash
from tools.knowledge.documents import DocumentError, ParsedDocument, passages
from tools.knowledge.fetch import USER_AGENT, Fetched, Fetcher, FetchError, FetchLimits, check_url
from tools.knowledge.files import kind_of, read_file
from tools.knowledge.html import decode_html, read_html
from tools.knowledge.text import script_of

# A block on at least this share of a site's pages (and on 3 or more) is its furniture.
REPEATED_SHARE = 0.5
REPEATED_MIN_PAGES = 3
MAX_FILE_BYTES = 20_000_000

# (done, total, what): the CLI's progress line, the Telegram message's edits
Progress = Callable[[int, int, str], None]

_LOC = re.compile(r"<loc>\s*([^<\s]+)\s*</loc>", re.IGNORECASE)


@dataclass(slots=True)
class SyncReport:
    """What one source's add or sync did (or `error`: nothing changed, and why)."""

    location: str
    title: str = ""
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    passages: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (location, why)
    error: str | None = None


class SourceError(Exception):
    """The whole source failed: one line, nothing changed."""


@dataclass(frozen=True, slots=True)
class _Doc:
    location: str
    fetched: Fetched | None  # None: unchanged by 304 (no body)
    parsed: ParsedDocument | None = None


def source_kind(location: str) -> str:
    """`file` for a path; for a URL `sitemap` (…xml), `site` (its root) or `page`."""
    if not location.startswith(("http://", "https://")):
        return "file"
    path = urlsplit(location).path
    if path.lower().endswith(".xml"):
        return "sitemap"
    if path in ("", "/"):
        return "site"
    return "page"


def sitemap_urls(body: bytes) -> list[str]:
    """The <loc> URLs of a sitemap or sitemap index (read as text: no XML entities)."""
    text = body.decode("utf-8", errors="replace")
    return [html_escape.unescape(u) for u in _LOC.findall(text)]


class KnowledgeSync:
    """The owner's sources over one knowledge base."""

    def __init__(
        self,
        knowledge: KnowledgeBase,
        limits: FetchLimits,
        *,
        max_pages: int = 200,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._knowledge = knowledge
        self._repo = knowledge.repo
        self._limits = limits
        self._max_pages = max_pages
        self._clock = clock

    async def add(self, location: str, progress: Progress | None = None) -> SyncReport:
        """Add a source (a file path or a URL) and sync it now. Bad input: the report's
        `error`, and the source is not kept."""
        location = _normal(location)
        existed = await self._repo.source(location) is not None
        kind = source_kind(location)
        if kind == "file":
            path = Path(location)
            if not await asyncio.to_thread(path.is_file):
                return SyncReport(location, error=f"{location}: no such file")
            if kind_of(path.name) is None:
                return SyncReport(
                    location,
                    error=f"{path.name}: not a supported file (PDF, DOCX, Markdown, text, HTML)",
                )
        else:
            try:
                check_url(location, allow_private=self._limits.allow_private)
            except FetchError as exc:
                return SyncReport(location, error=str(exc))
        source_id = await self._repo.ensure_source(kind, location, location, now=self._clock())
        record = await self._repo.source(location)
        assert record is not None and record.id == source_id
        report = await self.sync_source(record, progress)
        if report.error is not None and not existed:
            await self._repo.remove_source(location)
        return report

    async def sync(self, progress: Progress | None = None) -> list[SyncReport]:
        """Every file and URL source again, one after the other."""
        reports = []
        for source in await self._repo.sources():
            if source.kind in ("file", "page", "site", "sitemap"):
                reports.append(await self.sync_source(source, progress))
        return reports

    async def remove(self, location: str) -> bool:
        return await self._repo.remove_source(_normal(location))

    async def sync_source(
        self, source: SourceRecord, progress: Progress | None = None
    ) -> SyncReport:
        report = SyncReport(source.location, title=source.title)
        stored = await self._repo.document_states(source.id)
        try:
            if source.kind == "file":
                docs = [await asyncio.to_thread(self._read_file, source.location, stored)]
            else:
                async with Fetcher(self._limits) as fetcher:
                    docs = await self._fetch_source(fetcher, source, stored, report, progress)
            changed = await self._drafts(docs, stored, report, progress)
        except (SourceError, FetchError, DocumentError) as exc:
            report.error = str(exc)
            await self._repo.record_error(source.id, report.error, now=self._clock())
            return report
        keep = [d.location for d in docs]
        report.removed = len(set(stored) - set(keep))
        title = _source_title(source, docs)
        await self._repo.apply(source.id, changed, now=self._clock(), keep=keep, title=title)
        report.title = title or source.title
        return report

    # -- reading ------------------------------------------------------------------------

    def _read_file(self, location: str, stored: dict[str, DocumentState]) -> _Doc:
        path = Path(location)
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise SourceError(
                    f"{path.name}: {size / 1e6:.1f} MB, more than {MAX_FILE_BYTES / 1e6:.0f} MB"
                )
            data = path.read_bytes()
        except OSError as exc:
            raise SourceError(f"{location}: cannot be read ({type(exc).__name__})") from None
        fetched = Fetched(path.name, 200, "", None, data, None, None)
        state = stored.get(path.name)
        if state is not None and state.content_hash == content_hash(data):
            return _Doc(path.name, fetched)
        return _Doc(path.name, fetched, read_file(path.name, data))

    async def _fetch_source(
        self,
        fetcher: Fetcher,
        source: SourceRecord,
        stored: dict[str, DocumentState],
        report: SyncReport,
        progress: Progress | None,
    ) -> list[_Doc]:
        if source.kind == "page":
            doc = await self._fetch_page(fetcher, source.location, stored, conditional=True)
            return [doc]
        urls: list[str] | None
        if source.kind == "sitemap":
            urls = await self._sitemap(fetcher, source.location)
        else:
            urls = await self._site_urls(fetcher, source.location)
        if urls is None:  # no sitemap: crawl the site's links
            return await self._crawl(fetcher, source.location, stored, report, progress)
        docs = await self._fetch_all(fetcher, urls, stored, report, progress)
        return docs + await self._linked(fetcher, source.location, urls, docs, stored, report)

    async def _linked(
        self,
        fetcher: Fetcher,
        root: str,
        urls: Sequence[str],
        docs: list[_Doc],
        stored: dict[str, DocumentState],
        report: SyncReport,
    ) -> list[_Doc]:
        """The documents (PDF, DOCX) the pages link to on the same host, robots.txt
        respected, within max_pages. A page answered 304 was not read, so its links are
        unknown: the linked documents stored before are kept (checked again) until every
        page has been read; then one no page links to any more is removed."""
        linked = _linked_documents(docs, root)
        if any(d.fetched is None for d in docs):
            linked |= {loc for loc in stored if loc not in urls and _is_document(loc)}
        robots = await self._robots(fetcher, root)
        allowed = {u for u in linked if robots is None or robots.can_fetch(USER_AGENT, u)}
        room = max(0, self._max_pages - len(docs))
        more = sorted(allowed - {d.location for d in docs})[:room]
        if not more:
            return []
        return await self._fetch_all(fetcher, more, stored, report, None, need=False)

    async def _fetch_page(
        self, fetcher: Fetcher, url: str, stored: dict[str, DocumentState], *, conditional: bool
    ) -> _Doc:
        state = stored.get(url) if conditional else None
        fetched = await fetcher.get(
            url,
            etag=state.etag if state else None,
            last_modified=state.last_modified if state else None,
        )
        if fetched.not_modified:
            return _Doc(url, None)
        if state is not None and state.content_hash == content_hash(fetched.body):
            return _Doc(url, fetched)
        return _Doc(url, fetched, _parse(url, fetched))

    async def _fetch_all(
        self,
        fetcher: Fetcher,
        urls: Sequence[str],
        stored: dict[str, DocumentState],
        report: SyncReport,
        progress: Progress | None,
        *,
        need: bool = True,
    ) -> list[_Doc]:
        """The pages at `urls` (up to max_pages); a page that fails is skipped (or kept,
        `_skip`); with `need`, none readable is the source's failure."""
        docs: list[_Doc] = []
        for done, url in enumerate(urls[: self._max_pages], start=1):
            try:
                docs.append(await self._fetch_page(fetcher, url, stored, conditional=True))
            except (FetchError, DocumentError) as exc:
                self._skip(url, exc, stored, docs, report)
            if progress is not None:
                progress(done, min(len(urls), self._max_pages), url)
        if need and not docs:
            raise SourceError(f"{report.location}: no page could be read")
        return docs

    def _skip(
        self,
        url: str,
        exc: Exception,
        stored: dict[str, DocumentState],
        docs: list[_Doc],
        report: SyncReport,
    ) -> None:
        """A page that failed: gone (404/410: removed), else kept as it was stored."""
        report.skipped.append((url, str(exc)))
        gone = isinstance(exc, FetchError) and exc.status in (404, 410)
        if url in stored and not gone:
            docs.append(_Doc(url, None))

    async def _sitemap(self, fetcher: Fetcher, url: str, depth: int = 0) -> list[str]:
        fetched = await fetcher.get(url)
        found: list[str] = []
        for loc in sitemap_urls(fetched.body):
            if loc.lower().endswith(".xml") and depth < 2:  # a sitemap index
                found.extend(await self._sitemap(fetcher, loc, depth + 1))
            else:
                found.append(_normal(loc))
            if len(found) >= self._max_pages:
                break
        if not found:
            raise SourceError(f"{url}: the sitemap lists no pages")
        return list(dict.fromkeys(found))

    async def _site_urls(self, fetcher: Fetcher, root: str) -> list[str] | None:
        """The pages of the site's sitemap (robots.txt's or /sitemap.xml), None when it
        has none (then its links are crawled)."""
        robots = await self._robots(fetcher, root)
        candidates = list(robots.site_maps() or []) if robots is not None else []
        candidates.append(urljoin(root, "/sitemap.xml"))
        for candidate in candidates:
            try:
                urls = await self._sitemap(fetcher, candidate)
            except (FetchError, SourceError):
                continue
            return [u for u in urls if robots is None or robots.can_fetch(USER_AGENT, u)]
        return None

    async def _robots(
        self, fetcher: Fetcher, root: str
    ) -> urllib.robotparser.RobotFileParser | None:
        try:
            fetched = await fetcher.get(urljoin(root, "/robots.txt"))
        except FetchError:
            return None
        parser = urllib.robotparser.RobotFileParser()
        parser.parse(fetched.body.decode("utf-8", errors="replace").splitlines())
        return parser

    async def _crawl(
        self,
        fetcher: Fetcher,
        root: str,
        stored: dict[str, DocumentState],
        report: SyncReport,
        progress: Progress | None,
    ) -> list[_Doc]:
        """Same-host links, breadth-first from the root, up to `max_pages` (whole
        bodies: a page's links are needed even when it did not change)."""
        robots = await self._robots(fetcher, root)
        host = urlsplit(root).netloc
        queue = [root]
        seen = {root}
        docs: list[_Doc] = []
        while queue and len(docs) < self._max_pages:
            url = queue.pop(0)
            if robots is not None and not robots.can_fetch(USER_AGENT, url):
                continue
            try:
                doc = await self._fetch_page(fetcher, url, stored, conditional=False)
            except (FetchError, DocumentError) as exc:
                if url == root:
                    raise
                self._skip(url, exc, stored, docs, report)
                continue
            docs.append(doc)
            links = doc.parsed.links if doc.parsed else _links_of(doc)
            for link in links:
                link = _normal(link)
                if urlsplit(link).netloc == host and link not in seen:
                    seen.add(link)
                    queue.append(link)
            if progress is not None:
                progress(len(docs), min(len(seen), self._max_pages), url)
            await asyncio.sleep(0)
        return docs

    # -- passages -------------------------------------------------------------------------

    async def _drafts(
        self,
        docs: list[_Doc],
        stored: dict[str, DocumentState],
        report: SyncReport,
        progress: Progress | None,
    ) -> list[DocumentDraft]:
        furniture = _repeated_blocks([d.parsed for d in docs if d.parsed is not None])
        drafts: list[DocumentDraft] = []
        to_read = [d for d in docs if d.parsed is not None and d.fetched is not None]
        for done, doc in enumerate(to_read, start=1):
            assert doc.parsed is not None and doc.fetched is not None
            sections = passages(_without(doc.parsed, furniture))
            if not sections:
                report.skipped.append((doc.location, "no text"))
                continue
            passage_drafts = await self._knowledge.passages_of(sections)
            drafts.append(
                DocumentDraft(
                    location=doc.location,
                    title=doc.parsed.title or doc.location,
                    content_hash=content_hash(doc.fetched.body),
                    passages=passage_drafts,
                    etag=doc.fetched.etag,
                    last_modified=doc.fetched.last_modified,
                )
            )
            report.passages += len(passage_drafts)
            if doc.location in stored:
                report.updated += 1
            else:
                report.added += 1
            if progress is not None:
                progress(done, len(to_read), f"indexing {doc.location}")
        report.unchanged = len(docs) - len(to_read)
        return drafts


def _normal(location: str) -> str:
    if location.startswith(("http://", "https://")):
        url = urldefrag(location.strip())[0]
        parts = urlsplit(url)
        return url if parts.path else url + "/"
    return str(Path(location).expanduser().resolve())


def _parse(url: str, fetched: Fetched) -> ParsedDocument:
    if fetched.content_type == "application/pdf" or urlsplit(url).path.lower().endswith(".pdf"):
        return read_file(Path(urlsplit(url).path).name or "document.pdf", fetched.body)
    if fetched.content_type in ("text/plain", "text/markdown"):
        name = Path(urlsplit(url).path).name or "page.txt"
        return read_file(name if kind_of(name) else "page.txt", fetched.body)
    if fetched.content_type and "html" not in fetched.content_type:
        raise DocumentError(f"{url}: not a page or a document ({fetched.content_type})")
    return read_html(decode_html(fetched.body, fetched.charset), url)


def _links_of(doc: _Doc) -> list[str]:
    if doc.fetched is None or not doc.fetched.body:
        return []
    try:
        return _parse(doc.location, doc.fetched).links
    except DocumentError:
        return []


def _is_document(location: str) -> bool:
    return kind_of(Path(urlsplit(location).path).name) in ("pdf", "docx")


def _linked_documents(docs: Sequence[_Doc], root: str) -> set[str]:
    """Same-host links of the pages read now (changed or not) to PDF and DOCX files."""
    host = urlsplit(root).netloc
    found = set()
    for doc in (d for d in docs if not _is_document(d.location)):
        for link in doc.parsed.links if doc.parsed is not None else _links_of(doc):
            link = _normal(link)
            if urlsplit(link).netloc == host and _is_document(link):
                found.add(link)
    return found


def _repeated_blocks(parsed: Sequence[ParsedDocument]) -> set[str]:
    """Blocks on most of the site's pages, or on most of the pages in one script.

    Counting per script too finds the chrome of a site's smaller language half (the
    English pages' "Was this article helpful" on a mostly Russian site)."""
    furniture = _repeated_in(parsed)
    by_script: dict[str, list[ParsedDocument]] = {}
    for document in parsed:
        by_script.setdefault(_script_of(document), []).append(document)
    if len(by_script) > 1:
        for group in by_script.values():
            furniture |= _repeated_in(group)
    return furniture


def _repeated_in(parsed: Sequence[ParsedDocument]) -> set[str]:
    if len(parsed) < REPEATED_MIN_PAGES:
        return set()
    counts: Counter[str] = Counter()
    for document in parsed:
        counts.update({b for s in document.sections for b in s.blocks})
    least = max(REPEATED_MIN_PAGES, int(REPEATED_SHARE * len(parsed)))
    return {block for block, count in counts.items() if count >= least}


def _script_of(document: ParsedDocument) -> str:
    """Which alphabet, "cyrillic" or "latin", most of the page's letters are in."""
    return script_of("\n".join(b for s in document.sections for b in s.blocks))


def _without(document: ParsedDocument, furniture: set[str]) -> ParsedDocument:
    if not furniture:
        return document
    sections = []
    for section in document.sections:
        blocks = [b for b in section.blocks if b not in furniture]
        if blocks:
            sections.append(type(section)(section.headings, blocks))
    return ParsedDocument(document.title, sections, document.links)


def _source_title(source: SourceRecord, docs: Sequence[_Doc]) -> str | None:
    if source.title != source.location:
        return None
    first = next((d.parsed.title for d in docs if d.parsed is not None and d.parsed.title), None)
    return first
