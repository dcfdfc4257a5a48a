"""The local help-centre web site the knowledge tests fetch from behaves as a real one:
sitemap and robots, conditional GETs, pages that change and go, redirects, a slow and a
huge answer, a page in Windows-1251. Everything on 127.0.0.1; each test ends its server."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from pathlib import Path
from xml.etree import ElementTree

import aiohttp
import pytest

from tests.fakes.help_site import HUGE_BYTES, PDF_PATH, STAFF_PAGE, HelpSite

pytestmark = pytest.mark.sqlite_only


async def _get(url: str, **headers: str) -> tuple[int, Mapping[str, str], bytes]:
    async with aiohttp.ClientSession() as session:
        async with session.get(url, headers=headers, allow_redirects=False) as resp:
            return resp.status, resp.headers.copy(), await resp.read()


async def test_sitemap_lists_every_page_and_robots_points_to_it(help_site: HelpSite) -> None:
    status, _, body = await _get(help_site.url("/sitemap.xml"))
    assert status == 200
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locs = [e.text for e in ElementTree.fromstring(body).findall("s:url/s:loc", ns)]
    assert len(locs) == len(help_site.pages) >= 25
    assert help_site.url("/dostavka-vyhodnye.html") in locs
    _, _, robots = await _get(help_site.url("/robots.txt"))
    assert b"Disallow: /private/" in robots
    assert f"Sitemap: {help_site.url('/sitemap.xml')}".encode() in robots
    _, _, page = await _get(help_site.url("/kontakty.html"))
    assert STAFF_PAGE.encode() in page  # linked, though robots.txt forbids it


async def test_conditional_get_answers_304_until_the_page_changes(help_site: HelpSite) -> None:
    url = help_site.url("/vozvrat.html")
    status, headers, body = await _get(url)
    assert status == 200 and "ETag" in headers and "Last-Modified" in headers
    assert "14 дней".encode() in body
    status, _, _ = await _get(url, **{"If-None-Match": headers["ETag"]})
    assert status == 304
    status, _, _ = await _get(url, **{"If-Modified-Since": headers["Last-Modified"]})
    assert status == 304
    help_site.change_page(
        "/vozvrat.html", "<h1>Возврат товара</h1><p>Вернуть можно за 30 дней.</p>"
    )
    status, new_headers, body = await _get(url, **{"If-None-Match": headers["ETag"]})
    assert status == 200 and new_headers["ETag"] != headers["ETag"]
    assert "30 дней".encode() in body and "14 дней".encode() not in body
    assert help_site.fetches("/vozvrat.html") == 2


async def test_a_deleted_page_is_404_and_leaves_the_sitemap(help_site: HelpSite) -> None:
    help_site.delete_page("/obmen.html")
    status, _, _ = await _get(help_site.url("/obmen.html"))
    assert status == 404
    _, _, sitemap = await _get(help_site.url("/sitemap.xml"))
    assert b"/obmen.html" not in sitemap


async def test_the_pdf_is_served_with_validators(help_site: HelpSite) -> None:
    status, headers, body = await _get(help_site.url(PDF_PATH))
    assert status == 200 and headers["Content-Type"] == "application/pdf"
    assert body.startswith(b"%PDF") and "ETag" in headers


async def test_redirects(help_site: HelpSite) -> None:
    status, headers, _ = await _get(help_site.url("/redirect/old-delivery"))
    assert status == 301 and headers["Location"] == "/dostavka-moskva.html"
    _, headers, _ = await _get(help_site.url("/redirect/metadata"))
    assert headers["Location"].startswith("http://169.254.169.254/")
    _, headers, _ = await _get(help_site.url("/redirect/intranet"))
    assert headers["Location"].startswith("http://10.")
    _, headers, _ = await _get(help_site.url("/redirect/localhost"))
    assert headers["Location"].startswith("http://localhost:")
    _, headers, _ = await _get(help_site.url("/redirect/loop"))
    assert headers["Location"] == "/redirect/loop"


async def test_slow_and_huge_answers(help_site: HelpSite) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(help_site.url("/slow.html")) as resp:
            assert resp.status == 200
            first = await resp.content.read(10)  # the start comes at once, the rest never
            assert first.startswith(b"<!DOCTYPE")
        async with session.get(help_site.url("/huge-declared.html")) as resp:
            assert resp.content_length == HUGE_BYTES
        async with session.get(help_site.url("/huge.html")) as resp:
            assert resp.content_length is None
            read = 0
            async for chunk in resp.content.iter_chunked(1 << 16):
                read += len(chunk)
                if read > 4 * 1024 * 1024:
                    break
            assert read > 4 * 1024 * 1024


async def test_windows_1251_pages_and_404s(help_site: HelpSite) -> None:
    status, headers, body = await _get(help_site.url("/cp1251.html"))
    assert "windows-1251" in headers["Content-Type"]
    assert "Казань" in body.decode("cp1251")
    _, headers, body = await _get(help_site.url("/cp1251-meta.html"))
    assert "charset" not in headers["Content-Type"] and b"charset=windows-1251" in body
    status, _, _ = await _get(help_site.url("/files/returns-form.pdf"))
    assert status == 404


PROJECT = Path(__file__).resolve().parents[2]


async def test_the_site_runs_as_a_process_and_stops_on_sigterm() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fakes.help_site",
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        cwd=PROJECT,
    )
    try:
        assert proc.stdout is not None
        line = (await proc.stdout.readline()).decode()
        assert line.startswith("listening on http://127.0.0.1:")
        status, _, _ = await _get(line.split()[-1] + "/sitemap.xml")
        assert status == 200
    finally:
        proc.terminate()
        await proc.wait()
