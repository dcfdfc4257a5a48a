"""Reading a file an owner names on the command line (`import-data`, `simulate`): bounded,
never blocking, one line when it cannot be used.

Whatever the path is, the result is its text or an `InputFileError` with the line to
print, never a hang or a traceback: only a regular file is read (a FIFO, a device such as
/dev/zero, a folder or a socket is refused before anything is read, and the open never
blocks), at most `max_bytes` of it (checked before the open and while reading, for a
file that grows), and it must be UTF-8 text that is not empty.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_READ_CHUNK = 1024 * 1024


class InputFileError(Exception):
    """The input file cannot be used; the message is the one line to print."""


def _kind(mode: int) -> str | None:
    """What a non-regular file is, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_file(
    path: str, status: os.stat_result, max_bytes: int, expected: str, hint: str
) -> None:
    kind = _kind(status.st_mode)
    if kind is not None:
        raise InputFileError(f"{path} is {kind}, not {expected}")
    if status.st_size > max_bytes:
        raise InputFileError(
            f"{path} is {status.st_size} bytes, more than the {max_bytes} bytes "
            f"({max_bytes // 2**20} MB) {hint}"
        )


def read_text_file(path: str | Path, *, max_bytes: int, expected: str, too_large_hint: str) -> str:
    """The file's text (module docstring), else `InputFileError`. `expected` names what
    the file should be ("a JSON file"); `too_large_hint` ends the too-large line.

    The kind and size are checked before opening; the open is non-blocking (a FIFO swapped
    in after the check cannot hang it), the kind is checked again on the open file, and
    at most `max_bytes` + 1 bytes are ever read.
    """
    path = str(path)
    try:
        _check_file(path, os.stat(path), max_bytes, expected, too_large_hint)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    chunks: list[bytes] = []
    size = 0
    try:
        _check_file(path, os.fstat(fd), max_bytes, expected, too_large_hint)
        while size <= max_bytes:
            chunk = os.read(fd, min(_READ_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise InputFileError(f"{path} grew beyond {max_bytes} bytes while being read")
    data = b"".join(chunks)
    del chunks
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise InputFileError(f"{path} is empty")
    return text
