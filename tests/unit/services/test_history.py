"""The token estimate is deterministic; the window keeps whole pairs, newest first."""

from __future__ import annotations

from services.history import (
    HistoryPair,
    leaves_out,
    select_window,
    to_pairs,
    window_read_limit,
)
from storage.conversations import StoredMessage


def _msg(id: int, role: str, content: str) -> StoredMessage:
    return StoredMessage(
        id=id, session_id=1, role=role, content=content, turn_id=None, created_at=0.0
    )


def _pairs(*sizes: int) -> list[HistoryPair]:
    """Pairs whose user and assistant contents have the given character lengths."""
    messages: list[StoredMessage] = []
    for index, size in enumerate(sizes):
        messages.append(_msg(2 * index + 1, "user", "u" * size))
        messages.append(_msg(2 * index + 2, "assistant", "a" * size))
    return to_pairs(messages)


def _ids(pairs: list[HistoryPair]) -> list[tuple[int | None, int | None]]:
    return [(p.user.id if p.user else None, p.assistant.id if p.assistant else None) for p in pairs]


def test_messages_without_a_partner_are_units_of_their_own_not_dropped() -> None:
    messages = [
        _msg(4, "assistant", "orphan answer"),
        _msg(5, "user", "q"),
        _msg(6, "assistant", "a"),
        _msg(7, "user", "unanswered"),
    ]
    pairs = to_pairs(messages)
    assert _ids(pairs) == [(None, 4), (5, 6), (7, None)]
    assert [m["role"] for p in pairs for m in p.as_messages()] == [
        "assistant",
        "user",
        "assistant",
        "user",
    ]


def test_window_takes_newest_whole_pairs_that_fit() -> None:
    pairs = _pairs(40, 40, 40, 40)
    budget = 2 * pairs[0].tokens + pairs[0].tokens // 2
    window = select_window(pairs, budget_tokens=budget)
    assert [p.user.id for p in window] == [5, 7]  # the two newest, oldest first
    assert sum(p.tokens for p in window) <= budget
    for pair in window:  # never a half pair
        assert (pair.user.role, pair.assistant.role) == ("user", "assistant")


def test_window_stops_at_the_first_pair_that_does_not_fit() -> None:
    # the middle pair is too big: older small pairs are NOT pulled in around it
    pairs = _pairs(8, 400, 8)
    window = select_window(pairs, budget_tokens=100)
    assert [p.user.id for p in window] == [5]


def test_window_is_empty_when_the_newest_pair_alone_is_too_big() -> None:
    assert select_window(_pairs(8, 4000), budget_tokens=100) == []
    assert select_window([], budget_tokens=100) == []


def test_read_limit_is_enough_for_any_window() -> None:
    budget = 200
    tiny = _pairs(*([1] * 100))  # 10 tokens per pair
    window = select_window(tiny, budget)
    assert 2 * len(window) <= window_read_limit(budget)


def test_a_handoffs_messages_are_kept_one_by_one_not_dropped() -> None:
    # a handoff to a person: the customer writes twice, the operator answers twice, the
    # customer writes once more before /close
    messages = [
        _msg(1, "user", "q"),
        _msg(2, "assistant", "a"),
        _msg(3, "user", "first"),
        _msg(4, "user", "second"),
        _msg(5, "assistant", "person one"),
        _msg(6, "assistant", "person two"),
        _msg(7, "user", "after the last reply"),
    ]
    pairs = to_pairs(messages)
    assert _ids(pairs) == [(1, 2), (3, None), (4, 5), (None, 6), (7, None)]
    assert [m["content"] for p in pairs for m in p.as_messages()] == [m.content for m in messages]


def test_a_long_handoff_fills_the_window_with_its_newest_messages() -> None:
    # twelve operator replies of ~475 characters: together beyond the budget, yet the
    # window holds the newest of them and the customer's last message, never nothing
    messages = [_msg(1, "user", "q"), _msg(2, "assistant", "a"), _msg(3, "user", "refund?")]
    messages += [_msg(4 + i, "assistant", f"promise {i} " + "x" * 465) for i in range(12)]
    messages.append(_msg(16, "user", "and the rest?"))
    pairs = to_pairs(messages)
    window = select_window(pairs, budget_tokens=1000)
    contents = [m["content"] for p in window for m in p.as_messages()]
    assert contents[-1] == "and the rest?"
    assert contents[-2].startswith("promise 11 ")
    assert 0 < sum(p.tokens for p in window) <= 1000
    # what the window leaves out is reported, so the summary folds it first
    assert leaves_out(messages, window, read_limit=window_read_limit(1000))
    everything = select_window(pairs, budget_tokens=10_000)
    assert not leaves_out(messages, everything, read_limit=window_read_limit(10_000))
