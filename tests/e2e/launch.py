"""Starting the real bot process: forked from the warm fork server (the default) or spawned.

`start_bot_process(argv, env, cwd, ...)` gives an object with the part of
`asyncio.subprocess.Process` the tests use (`pid`, `returncode`, `stdout`, `stderr`,
`wait`, `send_signal`, `terminate`, `kill`); `run_bot_command` is `subprocess.run` for
`python -m bot ARGS`. Both fork from tests/e2e/forkserver.py unless E2E_START=spawn,
which runs every start the old way, a fresh `python -m bot` (as do the tests that are
about the interpreter's own start, `spawn=True`).

The fork server is started on first use (one per pytest process), waited for without a
time limit of its own (the per-test timeout bounds it), and stopped at the end of the
session by tests/conftest.py, which fails the run if it still had a child.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
START_SWITCH = "E2E_START"  # "spawn": every bot start is a fresh `python -m bot`
PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL


def forking() -> bool:
    """Whether bot starts go through the fork server (Linux, and not switched off)."""
    return os.environ.get(START_SWITCH, "fork") != "spawn" and hasattr(os, "pidfd_open")


class _Server:
    """The session's fork server process (tests/e2e/forkserver.py)."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="bot-forkserver-")
        self.path = os.path.join(self.folder, "fork.sock")
        self.log = os.path.join(self.folder, "server.log")
        env = {k: v for k, v in os.environ.items() if k != START_SWITCH}
        env["PYTHONUNBUFFERED"] = "1"
        # numpy (the knowledge search) starts OpenBLAS's worker thread at import; the fork
        # server may hold no thread but its own, and a shop's vectors need no BLAS threads
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        # The server ends when this process does: it reads EOF on this pipe once our end
        # is closed, by whichever thread, or by the process's death. (A parent-death
        # signal would be tied to the thread that started the server, and a thread of an
        # `asyncio.to_thread` ends with its test's loop: the server and its bots died.)
        alive_r, self._alive_w = os.pipe()  # both ends not inherited by other processes
        try:
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "tests.e2e.forkserver", self.path, str(alive_r)],
                    cwd=REPO_ROOT,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    pass_fds=(alive_r,),
                )
        except BaseException:
            os.close(self._alive_w)
            raise
        finally:
            os.close(alive_r)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # after the imports; as long as they take
        self.proc.stdout.close()
        if line.strip() != b"ready":
            self.proc.wait()
            os.close(self._alive_w)
            raise RuntimeError(f"the fork server did not start:\n{Path(self.log).read_text()}")

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.connect(self.path)
        return sock

    def stop(self) -> list[int]:
        """End the server; the pids of children it still had (and killed)."""
        left: list[int] = []
        if self.proc.poll() is None:
            try:
                with self.connect() as sock:
                    sock.send(json.dumps({"op": "stop"}).encode())
                    left = json.loads(sock.recv(1 << 16) or b'{"left": []}')["left"]
            except OSError:
                self.proc.kill()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self._alive_w)
        shutil.rmtree(self.folder, ignore_errors=True)
        return left


_server: _Server | None = None


def fork_server() -> _Server:
    global _server
    if _server is None or _server.proc.poll() is not None:
        _server = _Server()
    return _server


def stop_fork_server() -> list[int]:
    """Stop the session's fork server if one runs; the pids of the children it still had."""
    global _server
    if _server is None:
        return []
    server, _server = _server, None
    return server.stop()


def fork_server_pid() -> int | None:
    return _server.proc.pid if _server is not None and _server.proc.poll() is None else None


class ForkedProcess:
    """A child of the fork server, seen like an `asyncio.subprocess.Process`."""

    def __init__(
        self,
        sock: socket.socket,
        pid: int,
        pidfd: int,
        stdout: asyncio.StreamReader | None,
        stderr: asyncio.StreamReader | None,
        transports: list[asyncio.BaseTransport],
    ) -> None:
        self._sock = sock
        self.pid = pid
        self._pidfd = pidfd
        self.stdout = stdout
        self.stderr = stderr
        self._transports = transports
        self.returncode: int | None = None
        self._status: asyncio.Task[int] = asyncio.get_running_loop().create_task(self._receive())

    async def _receive(self) -> int:
        loop = asyncio.get_running_loop()
        try:
            data = await loop.sock_recv(self._sock, 1 << 16)
        finally:
            self._sock.close()
            os.close(self._pidfd)
            self._pidfd = -1
        reply = json.loads(data) if data else {"error": "the fork server went away"}
        if "status" not in reply:
            raise RuntimeError(f"fork server: {reply.get('error')}")
        self.returncode = os.waitstatus_to_exitcode(reply["status"])
        return self.returncode

    async def wait(self) -> int:
        return await asyncio.shield(self._status)

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None or self._pidfd < 0:
            return
        with contextlib.suppress(ProcessLookupError):  # exited; its status is on the way
            signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def communicate(self) -> tuple[bytes, bytes]:
        async def read(stream: asyncio.StreamReader | None) -> bytes:
            return b"" if stream is None else await stream.read()

        out, err = await asyncio.gather(read(self.stdout), read(self.stderr))
        await self.wait()
        self.close()
        return out, err

    def close(self) -> None:
        for transport in self._transports:
            transport.close()


async def _reader_of(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
    )
    return reader, transport


def _ask(request: dict[str, Any], fds: list[int]) -> tuple[socket.socket, int, int]:
    """Send one run request with the child's stdio; the connection, the pid, its pidfd."""
    sock = fork_server().connect()
    try:
        socket.send_fds(sock, [json.dumps(request).encode()], fds)
        data, pidfds, _, _ = socket.recv_fds(sock, 1 << 16, 1)
    except BaseException:
        sock.close()
        raise
    reply = json.loads(data) if data else {"error": "the fork server went away"}
    if "pid" not in reply or not pidfds:
        sock.close()
        for fd in pidfds:
            os.close(fd)
        raise RuntimeError(f"fork server: {reply.get('error')}")
    sock.setblocking(False)
    return sock, reply["pid"], pidfds[0]


async def fork_bot(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path | str,
    stdout: int = DEVNULL,
    stderr: int = PIPE,
    op: str = "run",
    address_space: int | None = None,
) -> ForkedProcess:
    """`python -m bot ARGV`, forked: stdin is /dev/null, stdout and stderr PIPE or DEVNULL;
    `address_space`: the child's RLIMIT_AS in bytes (it counts the warm imports too)."""
    ours: list[int] = []  # our ends of the pipes, -1 for DEVNULL
    theirs: list[int] = [os.open(os.devnull, os.O_RDONLY)]
    try:
        for wanted in (stdout, stderr):
            read_end, write_end = (
                os.pipe() if wanted == PIPE else (-1, os.open(os.devnull, os.O_WRONLY))
            )
            ours.append(read_end)
            theirs.append(write_end)
        request = {
            "op": op,
            "argv": argv,
            "env": env,
            "cwd": str(cwd),
            "address_space": address_space,
        }
        sock, pid, pidfd = _ask(request, theirs)
    except BaseException:
        for fd in ours:
            if fd >= 0:
                os.close(fd)
        raise
    finally:
        for fd in theirs:  # the child has its copies; our EOF depends on closing these
            os.close(fd)
    streams: list[asyncio.StreamReader | None] = [None, None]
    transports: list[asyncio.BaseTransport] = []
    for index, fd in enumerate(ours):
        if fd >= 0:
            streams[index], transport = await _reader_of(fd)
            transports.append(transport)
    return ForkedProcess(sock, pid, pidfd, streams[0], streams[1], transports)


async def start_bot_process(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path | str,
    stdout: int = DEVNULL,
    stderr: int = PIPE,
    spawn: bool = False,
) -> Any:
    """The bot process: forked (default) or a fresh `python -m bot` (`spawn`, E2E_START)."""
    if forking() and not spawn:
        return await fork_bot(argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *argv,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
    )


def _run_forked(
    argv: list[str],
    env: dict[str, str],
    cwd: Path | str,
    limit_s: float,
    address_space: int | None,
) -> subprocess.CompletedProcess[str]:
    """Fork, collect stdout and stderr, and wait, without a thread or an event loop: an
    exception here (the limit, the per-test timeout's signal) kills the child first."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    theirs = [os.open(os.devnull, os.O_RDONLY), out_w, err_w]
    request = {"op": "run", "argv": argv, "env": env, "cwd": str(cwd)}
    try:
        sock, _, pidfd = _ask({**request, "address_space": address_space}, theirs)
    except BaseException:
        os.close(out_r)
        os.close(err_r)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    output: dict[int, bytes] = {out_r: b"", err_r: b""}
    reply = b""
    try:
        with selectors.DefaultSelector() as selector:
            for fd in (out_r, err_r, sock.fileno()):
                selector.register(fd, selectors.EVENT_READ)
            deadline = time.monotonic() + limit_s
            while selector.get_map():
                ready = selector.select(max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise subprocess.TimeoutExpired(["python", "-m", "bot", *argv], limit_s)
                for key, _ in ready:
                    if key.fd == sock.fileno():  # the status: the child has been reaped
                        reply = sock.recv(1 << 16)
                        selector.unregister(key.fd)
                        continue
                    data = os.read(key.fd, 1 << 16)
                    output[key.fd] += data
                    if not data:
                        selector.unregister(key.fd)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        raise
    finally:
        for fd in (out_r, err_r, pidfd):
            os.close(fd)
        sock.close()
    status = json.loads(reply or b"{}").get("status")
    if status is None:
        raise RuntimeError("fork server: the run ended without a status")
    return subprocess.CompletedProcess(
        ["python", "-m", "bot", *argv],
        os.waitstatus_to_exitcode(status),
        output[out_r].decode("utf-8", "replace"),
        output[err_r].decode("utf-8", "replace"),
    )


def run_bot_command(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path | str,
    timeout: float = 300.0,
    spawn: bool = False,
    prefix: list[str] | None = None,
    address_space: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(["python", "-m", "bot", *argv], capture_output=True, text=True)`,
    forked unless `spawn`, E2E_START=spawn, or a `prefix` command (e.g. `unshare`) wraps it.
    `address_space`: an RLIMIT_AS (bytes) for the process."""
    if forking() and not spawn and not prefix:
        return _run_forked(argv, env, cwd, timeout, address_space)

    def limit() -> None:
        if address_space:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "bot", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        preexec_fn=limit if address_space else None,
    )
