"""Issue 20's scenario: SQLite vs PostgreSQL, one and two bot instances, in one run.

`--only instances` runs the latency phase (self-time) and the load phase (throughput) on
each configuration below, each on a fresh database: webhook and polling, SQLite with one
bot, PostgreSQL with one and with two bots. Two webhook bots share the load the way a
load balancer would (the driver's POSTs alternate); two polling bots are a leader and a
hot standby (only the leader polls, so the standby adds availability, not throughput).

PostgreSQL is the server named by `--database-url`, or else a private one started for the
run from the `pgserver` package (a dev dependency; nothing reaches the network). All the
processes — bots, fakes, PostgreSQL, the driver — share the machine's cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import secrets
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import psutil

# (mode, backend, instances), in the order they run
CONFIGS: tuple[tuple[str, str, int], ...] = (
    ("webhook", "sqlite", 1),
    ("webhook", "postgres", 1),
    ("webhook", "postgres", 2),
    ("polling", "sqlite", 1),
    ("polling", "postgres", 1),
    ("polling", "postgres", 2),
)
SQLITE = ""  # `start_bot(database_url=SQLITE)`: a SQLite file even with --database-url


class BenchLike(Protocol):
    """What this scenario uses of bench.run.Bench (kept apart to keep run.py small)."""

    plan: Any
    database_url: str | None
    out: Path

    async def start_bot(self, label: str, **extra: Any) -> Any: ...
    async def stop_bot(self, run: Any) -> int | None: ...
    async def closed_loop(
        self, run: Any, name: str, chats: Any, messages: int, kinds: str = "mix"
    ) -> dict[str, Any]: ...


async def create_database(server_url: str, prefix: str) -> str:
    """A new, empty database on the server (the bot migrates it at start); its URL."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


@dataclass
class Server:
    """The PostgreSQL the run uses; `pid` (its postmaster) when it is ours to measure."""

    url: str
    pid: int | None = None

    def cpu_s(self) -> float:
        """CPU seconds of the server so far: the postmaster and all its backends (live
        ones, and those already gone, which the postmaster has reaped). NaN if unknown."""
        if self.pid is None:
            return math.nan
        postmaster = psutil.Process(self.pid)
        times = postmaster.cpu_times()
        total = times.user + times.system + times.children_user + times.children_system
        for child in postmaster.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child_times = child.cpu_times()
                total += child_times.user + child_times.system
        return float(total)


@contextlib.contextmanager
def private_server() -> Iterator[Server]:
    """A PostgreSQL server for this run only (pgserver, a unix socket in a temp dir)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
        import pgserver

        server = pgserver.get_server(tempfile.mkdtemp(prefix="bench-pg-"), cleanup_mode="delete")
    try:
        yield Server(str(server.get_uri()), server.get_postmaster_info().pid)
    finally:
        server.cleanup()


async def phase_instances(bench: BenchLike, plan: Any) -> dict[str, Any]:
    """Every configuration of CONFIGS: latency, then load, on a fresh bot and database."""
    results: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        if bench.database_url is not None:
            server = Server(bench.database_url)  # not ours: its CPU is not measured
        else:
            server = await asyncio.to_thread(stack.enter_context, private_server())
        for mode, backend, count in CONFIGS:
            label = f"{mode}-{backend}-{count}"
            run = await bench.start_bot(
                label,
                webhook=mode == "webhook",
                database_url=server.url if backend == "postgres" else SQLITE,
                instances=count,
            )
            r: dict[str, Any] = {"mode": mode, "backend": backend, "instances": count}
            r["startup"] = run.startup
            r["latency"] = await bench.closed_loop(
                run, "latency", range(1, plan.latency_chats + 1), plan.latency_messages
            )
            database_cpu_before = server.cpu_s()
            r["load"] = await bench.closed_loop(
                run, "load", range(200_001, 200_001 + plan.load_chats), plan.load_messages
            )
            if backend == "postgres" and r["load"]["answered"]:
                spent = server.cpu_s() - database_cpu_before
                r["load"]["database_cpu_ms_per_turn"] = 1000 * spent / r["load"]["answered"]
            r["exit_code"] = await bench.stop_bot(run)
            results[label] = r
    return results


def instances_rows(runs: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """One row per configuration: throughput, self-time, CPU; measured, no target."""
    data = runs.get("instances")
    if not data:
        return []
    rows: list[tuple[str, str, bool | None]] = []
    for r in data.values():
        load, lat = r["load"], r["latency"]
        backend = "PostgreSQL" if r["backend"] == "postgres" else "SQLite"
        who = {1: "1 bot", 2: "2 bots" if r["mode"] == "webhook" else "leader + standby"}
        rows.append(
            (
                f"(issue 20) {r['mode']}, {backend}, {who[r['instances']]}",
                f"{load['throughput']['overall']:.1f} turns/s overall "
                f"({load['throughput']['steady']:.1f} steady) at {load['planned']} turns, "
                f"{load['errors']} errors, {load['order_violations']} order violations; "
                f"self-time p50 {lat['self_ms']['p50']:.1f} / p99 {lat['self_ms']['p99']:.1f} ms "
                f"({lat['errors']} errors); CPU per turn: bots {load['cpu_ms_per_turn']:.2f} ms"
                f"{database_cpu(load)}; machine busy {load['machine_cpu_busy_pct']:.0f} %",
                None,
            )
        )
    return rows


def database_cpu(load: dict[str, Any]) -> str:
    spent = load.get("database_cpu_ms_per_turn")
    if spent is None or math.isnan(spent):
        return ""
    return f" + PostgreSQL {spent:.2f} ms"
