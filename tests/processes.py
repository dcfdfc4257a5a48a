"""Whether a process still runs, read from Linux's /proc (a zombie has ended)."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """True while `pid` runs; False once it has exited (a zombie) or is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
