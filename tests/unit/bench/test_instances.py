"""The bench's issue-20 parts: several webhooks, a database per run, tool time on PostgreSQL.

Real parts: the bench's fake Bot API and two small aiohttp webhooks in this process, the
migrated schema on a real SQLite file and a real PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from aiohttp import web

from bench.analysis import postgres_tool_rows, sqlite_tool_rows, tool_time_by_update
from bench.driver import Driver
from bench.fake_telegram import BenchTelegramServer
from bench.instances import Server, create_database, database_cpu
from storage.database import open_database
from tests.pg import PgCluster

# one turn with two overlapping tool calls (1 s and 0.5 s from t=100) and one alone
TURN_SQL = (
    "INSERT INTO sessions (id, chat_id, opened_at) VALUES (1, 10, 0)",
    "INSERT INTO turns (id, session_id, chat_id, user_id, started_at, duration_ms, status,"
    " model_steps, tool_calls, prompt) VALUES ('t1', 1, 10, 10, 100, 2000, 'answered', 2, 2,"
    " 'p@1')",
    "INSERT INTO updates (update_id, chat_id, user_id, received_at, payload, turn_id)"
    " VALUES (77, 10, 10, 99, '{}', 't1')",
)
TOOL_SQL = (
    "INSERT INTO tool_calls (turn_id, chat_id, user_id, call_id, tool_name, started_at,"
    " duration_ms, status) VALUES ('t1', 10, 10, ?, 'get_order_status', ?, ?, 'success')"
)
TOOL_ROWS = (("c1", 100.0, 1000.0), ("c2", 100.5, 1000.0))


@pytest.fixture
async def telegram() -> AsyncIterator[BenchTelegramServer]:
    server = BenchTelegramServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_the_driver_alternates_its_posts_between_the_webhooks(
    telegram: BenchTelegramServer,
) -> None:
    received: dict[str, list[int]] = {"a": [], "b": []}
    runners: list[web.AppRunner] = []
    urls = []
    for name in ("a", "b"):

        async def hook(request: web.Request, name: str = name) -> web.Response:
            received[name].append((await request.json())["update_id"])
            return web.json_response({})

        app = web.Application()
        app.router.add_post("/hook", hook)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        urls.append(f"http://127.0.0.1:{port}/hook")
        runners.append(runner)
    try:
        async with Driver(telegram_url=telegram.base_url, webhook_url=urls) as driver:
            turns = [driver.new_turn(5, index, "greet") for index in range(4)]
            for turn in turns:  # one at a time, so the order of arrival is the order sent
                await driver.submit([turn])
        assert driver.webhook_errors == 0
    finally:
        for runner in runners:
            await runner.cleanup()
    ids = [t.update_id for t in turns]
    assert received == {"a": ids[0::2], "b": ids[1::2]}


@pytest.mark.postgres
async def test_each_run_gets_a_fresh_database_on_the_server(pg_cluster: PgCluster) -> None:
    first = await create_database(pg_cluster.admin_url, "bench_1")
    second = await create_database(pg_cluster.admin_url, "bench_1")
    assert first != second
    for url in (first, second):
        conn = await asyncpg.connect(url)
        try:
            assert (
                await conn.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname='public'") == 0
            )
        finally:
            await conn.close()


@pytest.mark.postgres
async def test_tool_time_reads_alike_from_sqlite_and_postgresql(
    tmp_path: Path, pg_url: str
) -> None:
    for url_or_path in (tmp_path / "bot.sqlite3", pg_url):
        database = await open_database(url_or_path)
        try:
            async with database.transaction() as tx:
                for sql in TURN_SQL:
                    await tx.execute(sql)
                await tx.executemany(TOOL_SQL, TOOL_ROWS)
        finally:
            await database.close()
    sqlite_rows = sqlite_tool_rows(tmp_path / "bot.sqlite3")
    postgres_rows = await postgres_tool_rows(pg_url)
    assert (
        sorted(sqlite_rows) == sorted(postgres_rows) == [(77, 100.0, 1000.0), (77, 100.5, 1000.0)]
    )
    # the overlap counts once: 100.0 → 101.5
    assert math.isclose(tool_time_by_update(postgres_rows, [77])[77], 1500.0)


@pytest.mark.postgres
async def test_the_cpu_of_a_private_server_is_measured_and_an_outside_one_is_not(
    pg_cluster: PgCluster,
) -> None:
    assert math.isnan(Server(pg_cluster.admin_url).cpu_s())
    ours = Server(pg_cluster.admin_url, pg_cluster._server.get_postmaster_info().pid)
    before = ours.cpu_s()
    conn = await asyncpg.connect(ours.url)  # a backend of its own, gone when closed
    try:
        await conn.fetchval("SELECT count(*) FROM generate_series(1, 2000000)")
    finally:
        await conn.close()
    assert before > 0
    # the backend's work counts, even once it is gone: the postmaster reaps it a moment
    # after the close (later on a loaded machine), and only then are its times its own
    async with asyncio.timeout(60):
        while True:
            if ours.cpu_s() > before:
                break
            await asyncio.sleep(0.05)  # the postmaster's state is read, never pushed
    assert database_cpu({"database_cpu_ms_per_turn": math.nan}) == ""
    assert database_cpu({"database_cpu_ms_per_turn": 1.234}) == " + PostgreSQL 1.23 ms"
