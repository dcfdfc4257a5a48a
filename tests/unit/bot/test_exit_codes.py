"""Exit statuses are a contract with scripts and service managers: the numbers never move."""

from __future__ import annotations

from bot.runtime.exit_codes import ExitCode


def test_the_documented_numbers() -> None:
    assert [(code.name, int(code)) for code in ExitCode] == [
        ("OK", 0),
        ("FAILED", 1),
        ("CANNOT_START", 2),
    ]


def test_a_system_exit_carries_the_plain_number() -> None:
    exit_ = SystemExit(ExitCode.CANNOT_START)
    assert exit_.code == 2 and isinstance(exit_.code, int)
