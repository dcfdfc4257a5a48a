"""The fork server: one warm process imports the bot once and forks `bot.programs.cli.main()` per
run.

Importing aiogram, openai and the rest costs some 6 s of CPU per `python -m bot`; the
bot's own start (settings, `.env`, migrations, start-up checks) is a fraction of that.
This process pays the imports once; every run is then a `fork()` that gets a fresh OS
process with its own environment, working directory, stdin/stdout/stderr, signals and
exit status, and goes through the real `bot.programs.cli.main()` like `python -m bot` does.

What makes a forked child equal to a spawned one:
- the server only imports: it never creates an event loop, a thread or a database
  handle (it checks before every fork and refuses to fork otherwise, `_check_clean`);
- the child closes every file the server holds (its sockets, selector, wake-up pipe),
  restores the signal handlers Python starts with, takes its three stdio descriptors,
  environment, working directory and argv from the request, and then returns to the top
  of this module, so the interpreter ends it exactly as it ends `python -m bot`
  (`SystemExit` status, a traceback and 1, atexit handlers, thread joins, death by signal);
- it dies with the server (PR_SET_PDEATHSIG: the server has one thread), and the server
  ends with its parent process: it reads EOF on the pipe whose other end only the parent
  holds, kills its children and exits (not a parent-death signal: that is tied to the
  parent's thread that started the server, which may end long before the process);
- what the imports built is frozen (gc.freeze) before any fork, so a child's collector
  does not walk (and copy) the warm heap; the child's own objects are collected as usual.

Protocol (one SOCK_SEQPACKET connection per run, tests/e2e/launch.py is the client):
request {"op": "run"|"probe", "argv", "env", "cwd", "address_space"} with the fds stdin,
stdout, stderr (`address_space`: an RLIMIT_AS for the child, or null);
reply {"pid"} with a pidfd of the child (signals go through it, never to a reused pid);
then {"status"}: the raw wait status, once the server has reaped the child. A client that
disconnects first has its child killed. {"op": "stop"} kills what is left, replies
{"left": [pids]} and ends the server.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import threading
from typing import Any

# the modules `python -m bot` imports on its way to a running bot (bot/programs/cli.py imports some
# of them lazily); one missing after a refactoring only costs its import in each child
WARM_MODULES = (
    "bot.programs.cli",
    "bot.telegram.app",
    "bot.programs.data_import",
    "bot.telegram.routers.admin",
    "storage.sqlite",
    "storage.postgres",
    "uvloop",
)
MAX_MESSAGE = 1 << 20
PR_SET_PDEATHSIG = 1


def _die_with_parent(expected_parent: int) -> None:
    """SIGKILL when the parent goes (Linux); nothing outlives the test session."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != expected_parent:  # the parent went before prctl took effect
        os._exit(1)


def _check_clean() -> str | None:
    """Why forking now would hand the child something a fresh process does not have."""
    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        return f"the fork server runs {threading.active_count()} threads"
    import asyncio

    if asyncio.events._get_running_loop() is not None:
        return "the fork server runs an event loop"
    policy_loop = getattr(getattr(asyncio.get_event_loop_policy(), "_local", None), "_loop", None)
    if policy_loop is not None:
        return "the fork server has an event loop set"
    return None


class ForkServer:
    def __init__(self, path: str, parent_alive: int) -> None:
        self._initial_handlers = {
            sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)
        }
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._listener.bind(path)
        self._listener.listen(64)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._parent_alive = parent_alive  # readable (EOF) once the parent process is gone
        self._selector.register(parent_alive, selectors.EVENT_READ)
        self._children: dict[int, socket.socket] = {}  # pid -> its client connection
        self._orphans: set[int] = set()  # killed because their client went away
        self._clients: set[socket.socket] = set()
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self._wake_w)

    def serve(self) -> dict[str, Any]:
        """Run until stopped (then exit); return only in a forked child, with its request."""
        while True:
            for key, _ in self._selector.select():
                if key.fileobj is self._listener:
                    conn, _ = self._listener.accept()
                    self._clients.add(conn)
                    self._selector.register(conn, selectors.EVENT_READ)
                elif key.fileobj == self._wake_r:
                    self._drain_wakeups()
                    self._reap()
                elif key.fileobj == self._parent_alive:
                    self._end_with_parent()
                else:
                    request = self._handle(key.fileobj)  # type: ignore[arg-type]
                    if request is not None:
                        return request

    def _handle(self, conn: socket.socket) -> dict[str, Any] | None:
        try:
            data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 3)
        except OSError:
            data, fds = b"", []
        if not data:  # the client went away: so does its child
            for fd in fds:
                os.close(fd)
            self._forget(conn)
            for pid, owner in list(self._children.items()):
                if owner is conn:
                    del self._children[pid]
                    self._orphans.add(pid)
                    _kill(pid)
            return None
        request = json.loads(data)
        if request["op"] == "stop":
            self._stop(conn)
        problem = _check_clean()
        if problem is not None or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            self._reply(conn, {"error": problem or "a run needs stdin, stdout and stderr"})
            self._forget(conn)
            return None
        return self._fork(conn, request, fds)

    def _fork(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> Any:
        server_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            self._become_child(fds, server_pid)
            return request
        for fd in fds:
            os.close(fd)
        self._children[pid] = conn
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as exc:  # the child cannot have been reaped yet: only we reap it
            self._reply(conn, {"error": f"pidfd_open: {exc}"})
            return None
        try:
            socket.send_fds(conn, [json.dumps({"pid": pid}).encode()], [pidfd])
        except OSError:
            pass  # the client is gone; its EOF kills the child
        finally:
            os.close(pidfd)
        return None

    def _become_child(self, fds: list[int], server_pid: int) -> None:
        """Leave nothing of the server behind: its files, its signal handling."""
        signal.set_wakeup_fd(-1)
        for sig, handler in self._initial_handlers.items():
            signal.signal(sig, handler)
        self._selector.close()
        self._listener.close()
        for client in self._clients:
            client.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        os.close(self._parent_alive)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        _die_with_parent(server_pid)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._orphans.discard(pid)
            conn = self._children.pop(pid, None)
            if conn is not None:
                self._reply(conn, {"status": status})
                self._forget(conn)

    def _stop(self, conn: socket.socket) -> None:
        left = self._end_children()
        self._reply(conn, {"left": left})
        os._exit(0)

    def _end_with_parent(self) -> None:
        """The parent process is gone (its end of the pipe closed): so are we."""
        if os.read(self._parent_alive, 1):  # nothing is ever written; only EOF counts
            return
        self._end_children()
        os._exit(0)

    def _end_children(self) -> list[int]:
        """Kill and reap every child still running or not yet reaped; their pids."""
        left = sorted([*self._children, *self._orphans])
        for pid in left:
            _kill(pid)
        for pid in left:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        return left

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def _reply(self, conn: socket.socket, message: dict[str, Any]) -> None:
        try:
            conn.send(json.dumps(message).encode())
        except OSError:
            pass

    def _forget(self, conn: socket.socket) -> None:
        if conn in self._clients:
            self._clients.discard(conn)
            self._selector.unregister(conn)
            conn.close()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def probe() -> None:
    """What a child inherited, on stdout (tests/e2e/test_fork_server.py)."""
    import asyncio

    policy_loop = getattr(getattr(asyncio.get_event_loop_policy(), "_local", None), "_loop", None)
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # listdir's own descriptor
            fds[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
    state = {
        "threads": threading.active_count(),
        "tasks": len(os.listdir("/proc/self/task")),
        "running_loop": asyncio.events._get_running_loop() is not None,
        "policy_loop": policy_loop is not None,
        "fds": sorted(fds),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "argv": sys.argv,
        "ppid": os.getppid(),
        "signals": {
            name: repr(signal.getsignal(getattr(signal, name)))
            for name in ("SIGINT", "SIGTERM", "SIGCHLD", "SIGPIPE")
        },
        "wakeup_fd": signal.set_wakeup_fd(-1),
    }
    print(json.dumps(state))


def run_child(request: dict[str, Any]) -> None:
    """Become `python -m bot ARGV` in the request's environment and folder."""
    if request.get("address_space"):
        import resource

        limit = request["address_space"]
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.path[0] = os.getcwd()  # as `python -m` puts it
    import bot.__main__ as entry  # the `-m bot` module (its `main` is bot.programs.cli.main)

    sys.argv = [str(entry.__file__), *request["argv"]]
    if request["op"] == "probe":
        probe()
        return
    from bot.programs.cli import main as bot_main

    bot_main(request["argv"])


def main() -> None:
    path, parent_alive = sys.argv[1], int(sys.argv[2])
    # numpy's BLAS (the knowledge's vectors) starts its worker threads when imported; one
    # thread of its own keeps this process forkable (the bot's products are einsum anyway)
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    problem = _check_clean()
    if problem is not None:
        raise SystemExit(f"fork server: {problem} after importing the bot")
    server = ForkServer(path, parent_alive)
    # what the imports left is the program, not garbage: frozen, the children's collector
    # never walks it (and never copies its pages); a config error's run then takes
    # 0.3 s instead of 1.7 s (Python's documented use of gc.freeze before fork())
    gc.collect()
    gc.freeze()
    print("ready", flush=True)
    request = server.serve()
    run_child(request)


if __name__ == "__main__":
    main()
