"""The process's exit statuses: one table for every entry point (run and import-data).

Scripts and service managers act on these numbers, so they are defined once:
0 the work was done; 1 the work failed (a fatal error while running; import data that
is invalid or that the database refused); 2 the process could not start on what it was
given (a setting, the database or its schema, an unreadable or non-JSON input file) —
the same status argparse uses for bad arguments. Nothing was done in the last case.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    CANNOT_START = 2


class CannotStart(Exception):
    """A setting cannot be used as given (e.g. WEB_PORT is taken); the message names it.
    The program prints the message alone and ends with `ExitCode.CANNOT_START`."""
