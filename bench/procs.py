"""The processes a bench run starts (fakes, the bot) and what /proc says about them.

Every process is started in its own session and registered with a `ProcessGroup`; the
group kills whatever is still running when the run ends, also on an error or Ctrl-C, so
a bench never leaves servers behind. Output goes to a log file per process; the bench
waits for a readiness line on it, bounded by a timeout, instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Managed:
    """One child process and its log; `lines` keeps the log for readiness checks."""

    name: str
    proc: asyncio.subprocess.Process
    log_path: Path
    started_at: float  # epoch seconds just before the spawn
    lines: list[str] = field(default_factory=list)
    _reader: asyncio.Task[None] | None = None
    _seen: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    async def wait_for_line(self, needle: str, within: float) -> str:
        """The first output line containing `needle`; fails if the process exits first."""
        deadline = time.monotonic() + within
        while True:
            for line in self.lines:
                if needle in line:
                    return line
            if not self.running:
                raise RuntimeError(
                    f"{self.name} exited ({self.proc.returncode}); see {self.log_path}"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"{self.name}: no '{needle}' within {within} s; see {self.log_path}"
                )
            self._seen.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seen.wait(), min(remaining, 0.5))

    async def stop(self, within: float = 30.0) -> int | None:
        """SIGTERM, wait (bounded), then SIGKILL. Returns the exit status."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), within)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, 5)
        return self.proc.returncode

    def kill_now(self) -> None:
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()


class ProcessGroup:
    """Starts processes and guarantees they are gone when the `async with` block ends."""

    def __init__(self, log_dir: Path) -> None:
        self._log_dir = log_dir
        self._procs: list[Managed] = []

    async def __aenter__(self) -> ProcessGroup:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for managed in reversed(self._procs):
            try:
                await asyncio.wait_for(managed.stop(within=15), 20)
            except BaseException:
                managed.kill_now()
                raise

    async def spawn(
        self,
        name: str,
        args: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Managed:
        log_path = self._log_dir / f"{name}.log"
        started_at = time.time()
        proc = await asyncio.create_subprocess_exec(
            *args,
            cwd=cwd or REPO_ROOT,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the terminal reaches the bench only
        )
        managed = Managed(name=name, proc=proc, log_path=log_path, started_at=started_at)
        managed._reader = asyncio.create_task(_pump(managed))
        self._procs.append(managed)
        return managed

    async def spawn_python(
        self,
        name: str,
        module_args: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Managed:
        return await self.spawn(name, [sys.executable, *module_args], env=env, cwd=cwd)


async def _pump(managed: Managed) -> None:
    """Copy the child's output to its log file, keeping the lines for readiness checks."""
    assert managed.proc.stdout is not None
    with managed.log_path.open("a", encoding="utf-8") as log:
        async for raw in managed.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            log.write(line + "\n")
            if len(managed.lines) < 10_000:  # enough for readiness lines; logs keep the rest
                managed.lines.append(line)
            managed._seen.set()


@dataclass(frozen=True)
class ProcSample:
    """Memory (kB) and CPU seconds of a process at one moment."""

    rss_kb: int
    hwm_kb: int
    cpu_s: float


def sample(pid: int) -> ProcSample:
    """VmRSS/VmHWM from /proc/<pid>/status and utime+stime from /proc/<pid>/stat."""
    status = Path(f"/proc/{pid}/status").read_text()
    values: dict[str, int] = {}
    for line in status.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    utime, stime = int(fields[11]), int(fields[12])
    return ProcSample(
        rss_kb=values.get("VmRSS", 0),
        hwm_kb=values.get("VmHWM", 0),
        cpu_s=(utime + stime) / CLOCK_TICKS,
    )
