"""Start-up refusals of the real process: one line on stderr, exit status 2."""

from __future__ import annotations

import asyncio
import random
import shutil
import socket
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from storage.database import open_database
from storage.inbox import InboxRepository, NewUpdate
from tests.damage import corrupt_table
from tests.e2e.conftest import StartBot
from tests.e2e.harness import WEBHOOK_SECRET, BotProcess, free_port, webhook_env
from tests.e2e.launch import run_bot_command
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.openai_server import error as openai_error
from tests.fakes.telegram_server import FakeTelegramServer, message_update


async def test_database_newer_than_the_code_exits_2_with_one_line(
    bot_base_env: dict[str, str], database_path: Path, tmp_path: Path
) -> None:
    database_path.parent.mkdir(parents=True)
    with sqlite3.connect(database_path) as conn:
        conn.execute("PRAGMA user_version = 999")
    process = await BotProcess(bot_base_env, tmp_path).start()
    assert await process.wait_exit() == 2
    assert len(process.lines) == 1, process.output
    assert "newer" in process.lines[0] and "Traceback" not in process.output
    with sqlite3.connect(database_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 999  # left untouched


async def test_an_occupied_webhook_port_is_one_error_line_naming_it_and_exit_2(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = webhook_env(bot_base_env, port)
        process = await BotProcess(env, tmp_path).start()
        assert await process.wait_exit() == 2
    errors = [line for line in process.lines if "error" in line.lower()]
    assert errors == [
        f"error: WEB_HOST/WEB_PORT 127.0.0.1:{port}: cannot listen there: address already in use"
    ], process.output
    assert "Traceback" not in process.output
    assert env["BOT_TOKEN"] not in process.output and WEBHOOK_SECRET not in process.output


async def test_a_web_host_not_on_this_machine_is_one_error_line_and_exit_2(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**webhook_env(bot_base_env, 8443), "WEB_HOST": "192.0.2.1"}  # TEST-NET-1
    process = await BotProcess(env, tmp_path).start()
    assert await process.wait_exit() == 2
    errors = [line for line in process.lines if "error" in line.lower()]
    assert len(errors) == 1, process.output
    assert errors[0].startswith("error: WEB_HOST/WEB_PORT 192.0.2.1:8443: cannot listen there: ")
    assert "Traceback" not in process.output


def _errors(process: BotProcess) -> list[str]:
    return [line for line in process.lines if "error" in line.lower()]


def _no_secrets(process: BotProcess, env: dict[str, str]) -> None:
    secret = env["BOT_TOKEN"].split(":", 1)[1]
    assert secret not in process.output and env["OPENAI_API_KEY"] not in process.output
    assert "Traceback" not in process.output


async def test_a_token_telegram_rejects_401_is_one_line_naming_it_and_exit_2(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**bot_base_env, "BOT_TOKEN": "999:revoked-token"}
    process = await BotProcess(env, tmp_path).start()
    assert await process.wait_exit() == 2
    assert _errors(process) == [
        "error: BOT_TOKEN was rejected by Telegram (401 Unauthorized): the token is wrong "
        "or was revoked; copy it again from @BotFather"
    ], process.output
    assert "ready" not in process.output
    _no_secrets(process, env)


async def test_a_token_telegram_does_not_know_404_is_one_line_naming_it_and_exit_2(
    bot_base_env: dict[str, str], fake_telegram: FakeTelegramServer, tmp_path: Path
) -> None:
    fake_telegram.unknown_token_status = 404  # Telegram's answer for a deleted bot's token
    env = {**bot_base_env, "BOT_TOKEN": "999:token-of-a-deleted-bot"}
    process = await BotProcess(env, tmp_path).start()
    assert await process.wait_exit() == 2
    assert _errors(process) == [
        "error: BOT_TOKEN is not known to Telegram (404 Not Found): the bot was deleted or "
        "the token is incomplete; copy it again from @BotFather"
    ], process.output
    assert "ready" not in process.output and not fake_telegram.calls_of("getUpdates")
    _no_secrets(process, env)


async def test_an_unreachable_telegram_is_retried_with_a_line_and_ready_comes_after_getme(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()  # nobody listens here yet
    env = {**bot_base_env, "TELEGRAM_API_URL": f"http://127.0.0.1:{port}"}
    process = await BotProcess(env, tmp_path).start()
    line = await process.wait_for_line("Telegram is unreachable")
    assert line.endswith(
        f"WARNING bot: Telegram is unreachable at 127.0.0.1:{port}; retrying in 1 s"
    ), process.output
    await process.wait_for_line("retrying in 2 s")  # still retrying, never "ready"
    assert "bot: ready" not in process.output
    telegram = FakeTelegramServer(token=env["BOT_TOKEN"])
    await telegram.start(port)  # Telegram comes back
    try:
        await process.wait_ready()
        assert telegram.calls_of("getMe")
        assert process.output.index("bot @") < process.output.index("bot: ready")
        assert await process.terminate() == 0
    finally:
        await telegram.stop()
    _no_secrets(process, env)


async def test_sigterm_while_telegram_is_unreachable_stops_at_once(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {**bot_base_env, "TELEGRAM_API_URL": f"http://127.0.0.1:{port}"}
    process = await BotProcess(env, tmp_path).start()
    await process.wait_for_line("Telegram is unreachable")  # start-up is retrying
    # the retries go on for as long as Telegram is away; a stop must not wait for them
    assert await process.terminate() == 0
    assert "stopping during start-up" in process.output
    assert "Traceback" not in process.output


# --- the model endpoint: one free GET /models before "ready" ---


async def test_an_api_key_the_model_endpoint_rejects_is_one_line_and_exit_2(
    bot_base_env: dict[str, str], fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.models_reply = openai_error(401, "Incorrect API key provided")
    process = await BotProcess(bot_base_env, tmp_path).start()
    assert await process.wait_exit() == 2
    host = fake_openai.base_url.split("/")[2]
    assert _errors(process) == [
        f"error: OPENAI_API_KEY was rejected by the model endpoint {host} (HTTP 401)"
    ], process.output
    assert "ready" not in process.output and fake_openai.requests == []
    _no_secrets(process, bot_base_env)


async def test_a_model_the_endpoint_does_not_offer_is_one_line_and_exit_2(
    bot_base_env: dict[str, str], fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.models = ["gpt-4o", "fallback-ok"]
    env = {**bot_base_env, "OPENAI_FALLBACK_MODELS": "fallback-ok,fallback-gone"}
    process = await BotProcess(env, tmp_path).start()
    assert await process.wait_exit() == 2
    host = fake_openai.base_url.split("/")[2]
    assert _errors(process) == [
        f'error: OPENAI_MODEL "fake-model" and OPENAI_FALLBACK_MODELS "fallback-gone": not '
        f"offered by the model endpoint {host} (GET /models)"
    ], process.output
    assert fake_openai.models_requests == 1 and fake_openai.requests == []  # no tokens spent
    _no_secrets(process, env)


async def test_an_endpoint_without_a_model_list_is_a_warning_and_the_bot_starts(
    start_bot: StartBot, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.models_reply = openai_error(404, "Not Found")
    process = await start_bot()
    host = fake_openai.base_url.split("/")[2]
    assert (
        f"WARNING bot: cannot check OPENAI_MODEL: the model endpoint {host} does not list "
        "its models (GET /models answered HTTP 404); continuing"
    ) in process.output
    assert await process.terminate() == 0


async def test_the_model_check_can_be_switched_off(
    start_bot: StartBot, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.models = []  # would be fatal if checked
    process = await start_bot(OPENAI_STARTUP_CHECK="false")
    assert fake_openai.models_requests == 0
    assert await process.terminate() == 0


async def test_an_unreachable_model_endpoint_is_retried_with_a_line_until_it_answers(
    bot_base_env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    env = {**bot_base_env, "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    process = await BotProcess(env, tmp_path).start()
    line = await process.wait_for_line("model endpoint")
    assert line.endswith(
        f"WARNING bot: the model endpoint 127.0.0.1:{port} (OPENAI_BASE_URL) is unreachable "
        "or failing; retrying in 1 s"
    ), process.output
    assert "bot: ready" not in process.output
    model = await FakeOpenAIServer().start(port=port)
    try:
        await process.wait_ready()
        assert model.models_requests >= 1
        assert await process.terminate() == 0
    finally:
        await model.close()
    _no_secrets(process, env)


# --- an unusable DATABASE_PATH: one line naming it, exit 2, never a traceback ---

SECRET_KEY = "sk-startup-secret-key"


def _bot_env(clean_env: dict[str, str], database: Path) -> dict[str, str]:
    """Settings that get the process as far as opening the database, and no further."""
    with socket.socket() as closed:  # Telegram is never reached: the database comes first
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    return {
        **clean_env,
        "BOT_TOKEN": "123456:startup-secret-token",
        "OPENAI_API_KEY": SECRET_KEY,
        "TELEGRAM_API_URL": f"http://127.0.0.1:{port}",
        "DATABASE_PATH": str(database),
    }


def _run(
    env: dict[str, str], cwd: Path, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return run_bot_command([], env=env, cwd=cwd, prefix=list(prefix))


def _migrated(path: Path) -> Path:
    """A database file this version of the bot has created (WAL mode, current schema)."""

    async def create() -> None:
        db = await open_database(path)
        await db.close()

    path.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(create())
    return path


def _random_bytes(tmp_path: Path) -> Path:
    path = tmp_path / "random.sqlite3"
    path.write_bytes(random.Random(13).randbytes(64 * 1024))
    return path


def _text_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.sqlite3"
    path.write_text("these are not the tables you are looking for\n")
    return path


def _truncated(tmp_path: Path) -> Path:
    path = tmp_path / "truncated.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _damaged_inbox(tmp_path: Path) -> Path:
    """A database of this version with a damaged page in the inbox (a failing disk)."""
    path = _migrated(tmp_path / "data" / "bot.sqlite3")
    corrupt_table(path, "updates")
    return path


def _folder(tmp_path: Path) -> Path:
    path = tmp_path / "bot.sqlite3"
    path.mkdir()
    return path


def _under_a_file(tmp_path: Path) -> Path:
    (tmp_path / "data").write_text("a file where the folder should be")
    return tmp_path / "data" / "bot.sqlite3"


def _device(tmp_path: Path) -> Path:
    return Path("/dev/null")


BAD_DATABASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "random bytes": (_random_bytes, "is not an SQLite database"),
    "a text file": (_text_file, "is not an SQLite database"),
    "a truncated SQLite file": (_truncated, "is corrupt"),
    "a damaged inbox page": (_damaged_inbox, "is corrupt (SQLite quick_check: "),
    "a folder": (_folder, "is a folder"),
    "a file in place of its folder": (_under_a_file, "a file is in the way"),
    "a device": (_device, "is not a regular file"),
}


def _assert_one_line(
    result: subprocess.CompletedProcess[str], database: Path, problem: str
) -> None:
    assert result.returncode == 2, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith(f"error: DATABASE_PATH {database}: ")
    assert problem in lines[0]
    assert "Traceback" not in result.stderr
    assert "startup-secret-token" not in result.stderr and SECRET_KEY not in result.stderr


@pytest.mark.parametrize(("make", "problem"), list(BAD_DATABASES.values()), ids=list(BAD_DATABASES))
def test_an_unusable_database_path_is_one_line_and_exit_2(
    clean_env: dict[str, str], tmp_path: Path, make: Callable[[Path], Path], problem: str
) -> None:
    database = make(tmp_path)
    result = _run(_bot_env(clean_env, database), tmp_path)
    _assert_one_line(result, database, problem)


async def test_damage_the_check_at_start_did_not_reach_is_one_line_and_exit_2(
    bot_base_env: dict[str, str],
    fake_telegram: FakeTelegramServer,
    database_path: Path,
    tmp_path: Path,
) -> None:
    """The check is bounded in time: on a big file the first statement that meets a damaged
    page (here the inbox, read to resume unfinished work) ends the start the same way."""
    database_path.parent.mkdir(parents=True)
    db = await open_database(database_path)
    # an update the previous run stored and did not finish: resumed at start
    payload = message_update(77, text="hello", update_id=501)
    await InboxRepository(db).record(
        [NewUpdate(update_id=int(payload["update_id"]), chat_id=77, user_id=77, payload=payload)]
    )
    await db.close()
    corrupt_table(database_path, "updates")
    env = {**bot_base_env, "DATABASE_INTEGRITY_CHECK_S": "0"}
    process = await BotProcess(env, tmp_path).start()
    try:
        code = await process.wait_exit()
    finally:
        await process.kill()  # nothing left running if it did not stop by itself
    assert code == 2
    errors = [line for line in process.lines if line.startswith("error:")]
    assert errors == [
        f"error: DATABASE_PATH {database_path}: is corrupt (SQLite: database disk image "
        "is malformed); restore a backup"
    ], process.output
    assert "fatal" not in process.output and "Traceback" not in process.output
    assert "ready" not in process.output


def test_a_database_locked_by_another_process_is_one_line_and_exit_2(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    database = _migrated(tmp_path / "data" / "bot.sqlite3")
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # held until the bot has given up (busy timeout)
        result = _run(_bot_env(clean_env, database), tmp_path)
    finally:
        holder.close()
    _assert_one_line(result, database, "is locked by another process")


def test_an_immutable_database_file_is_one_line_and_exit_2(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    """Root ignores permission bits; an immutable file (chattr +i) refuses even root."""
    database = _migrated(tmp_path / "data" / "bot.sqlite3")
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    made = subprocess.run(["chattr", "+i", str(database)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not possible here: {made.stderr!r}")
    try:
        result = _run(_bot_env(clean_env, database), tmp_path)
    finally:
        subprocess.run(["chattr", "-i", str(database)], check=True)
    _assert_one_line(result, database, "cannot be written: Operation not permitted")


READ_ONLY_MOUNT = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'


def _read_only_prefix(folder: Path) -> tuple[str, ...]:
    """Run the command in a private mount namespace where `folder` is mounted read-only."""
    prefix = ("unshare", "-m", "sh", "-c", READ_ONLY_MOUNT, "sh", str(folder))
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"a read-only mount is not possible here: {probe.stderr!r}")
    return prefix


@pytest.mark.parametrize("existing", [True, False], ids=["existing database", "new database"])
def test_a_read_only_filesystem_is_one_line_and_exit_2(
    clean_env: dict[str, str], tmp_path: Path, existing: bool
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    database = _migrated(folder / "bot.sqlite3") if existing else folder / "bot.sqlite3"
    result = _run(_bot_env(clean_env, database), tmp_path, _read_only_prefix(folder))
    _assert_one_line(result, database, "Read-only file system")


FULL_MOUNT = 'mount -t tmpfs -o size=12k tmpfs "$1" && shift && exec "$@"'


def test_a_full_filesystem_is_one_line_and_exit_2(
    clean_env: dict[str, str], tmp_path: Path
) -> None:
    """A new database on a 12 KB filesystem: SQLite cannot even create its files."""
    folder = tmp_path / "data"
    folder.mkdir()
    prefix = ("unshare", "-m", "sh", "-c", FULL_MOUNT, "sh", str(folder))
    _read_only_prefix(folder)  # skips where mount namespaces are not available
    database = folder / "bot.sqlite3"
    result = _run(_bot_env(clean_env, database), tmp_path, prefix)
    _assert_one_line(result, database, "filesystem is full")
