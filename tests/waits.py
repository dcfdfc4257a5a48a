"""The one outer limit of the tests' waits on a condition (docs/testing.md, "No time-bound
flakes").

A healthy wait ends in a fraction of it even when the two cores are shared by four test
workers and two more busy processes; a wait that runs it out has found a real fault, and
fails with what it waited for. pytest-timeout (300 s) stays above it, so a test's own
wait fails first, with its message.
"""

OUTER_LIMIT_S = 120.0
