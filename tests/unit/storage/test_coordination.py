"""Chat claims and heartbeats on a real PostgreSQL: who may work on a chat, and for how long.

A lease "running out" is made by moving its `lease_until` into the past in SQL — the same
row state the database clock produces after a SIGKILL — so no test waits for a clock.
"""

from __future__ import annotations

import asyncio

import pytest

from storage.coordination import FENCE, ClaimRepository, claim_text, parse_claim
from storage.inbox import InboxRepository, NewUpdate
from storage.postgres import PgDatabase

pytestmark = pytest.mark.postgres

LEASE_S = 30.0


@pytest.fixture
def pg(pg_db: PgDatabase) -> PgDatabase:
    return pg_db


@pytest.fixture
def a(pg: PgDatabase) -> ClaimRepository:
    return ClaimRepository(pg, owner="instance-a", lease_s=LEASE_S)


@pytest.fixture
def b(pg: PgDatabase) -> ClaimRepository:
    return ClaimRepository(pg, owner="instance-b", lease_s=LEASE_S)


async def expire(pg: PgDatabase, key: tuple[str, int]) -> None:
    """The lease ran out (its owner stopped renewing it)."""
    await pg.write("UPDATE chat_claims SET lease_until = 0 WHERE claim_key = ?", (claim_text(key),))


async def store(pg: PgDatabase, update_id: int, chat_id: int | None) -> None:
    await InboxRepository(pg).record(
        [NewUpdate(update_id=update_id, chat_id=chat_id, user_id=1, payload={"x": 1})]
    )


def test_claim_keys_read_back_as_written() -> None:
    assert claim_text(("chat", -100123)) == "chat:-100123"
    assert parse_claim("update:77") == ("update", 77)
    with pytest.raises(ValueError):
        claim_text(("user", 1))
    with pytest.raises(ValueError):
        parse_claim("chat:")


async def test_a_claimed_chat_is_not_anothers_until_its_lease_runs_out(
    pg: PgDatabase, a: ClaimRepository, b: ClaimRepository
) -> None:
    assert await a.claim([("chat", 1), ("update", 5)]) == {("chat", 1), ("update", 5)}
    assert await b.claim([("chat", 1), ("chat", 2)]) == {("chat", 2)}
    assert await a.claim([("chat", 1)]) == {("chat", 1)}  # our own: renewed, still ours

    await expire(pg, ("chat", 1))

    assert await b.claim([("chat", 1)]) == {("chat", 1)}
    assert await a.claim([("chat", 1)]) == set()


async def test_concurrent_claims_of_the_same_chats_give_each_chat_to_one_instance(
    a: ClaimRepository, b: ClaimRepository
) -> None:
    chats = [("chat", n) for n in range(200)]
    got_a, got_b = await asyncio.gather(a.claim(chats), b.claim(list(reversed(chats))))

    assert got_a.isdisjoint(got_b)
    assert got_a | got_b == set(chats)


async def test_the_heartbeat_renews_ours_reports_lost_ones_and_counts_live_instances(
    pg: PgDatabase, a: ClaimRepository, b: ClaimRepository
) -> None:
    await a.claim([("chat", 1), ("chat", 2)])
    first = await a.heartbeat(live_within_s=LEASE_S)
    assert first.held == {("chat", 1), ("chat", 2)}
    assert first.live_instances == 1

    await expire(pg, ("chat", 2))
    await b.claim([("chat", 2)])  # taken over after our lease ran out
    assert (await b.heartbeat(live_within_s=LEASE_S)).live_instances == 2
    second = await a.heartbeat(live_within_s=LEASE_S)
    assert second.held == {("chat", 1)}
    assert second.live_instances == 2

    # renewal moved the lease on the database clock: a lease of LEASE_S from now
    [(left,)] = await pg.fetch_all(
        "SELECT lease_until - CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION) "
        "FROM chat_claims WHERE claim_key = 'chat:1'"
    )
    assert 0 < left <= LEASE_S

    await pg.write("UPDATE instances SET heartbeat_at = 0 WHERE id = 'instance-b'")  # silent
    assert (await a.heartbeat(live_within_s=LEASE_S)).live_instances == 1


async def test_a_claim_is_given_back_only_when_its_chat_has_nothing_unfinished(
    pg: PgDatabase, a: ClaimRepository
) -> None:
    inbox = InboxRepository(pg)
    await a.claim([("chat", 7), ("update", 9)])
    await store(pg, 1, 7)  # another instance stored an update of the chat meanwhile
    await store(pg, 9, None)

    assert await a.release(("chat", 7)) is False
    assert await a.release(("update", 9)) is False

    await inbox.finish(1, "delivered")
    await inbox.finish(9, "ignored", reason="test")
    assert await a.release(("chat", 7)) is True
    assert await a.release(("update", 9)) is True
    assert (await a.heartbeat(live_within_s=LEASE_S)).held == frozenset()


async def test_a_claim_that_is_not_ours_is_not_given_back(
    pg: PgDatabase, a: ClaimRepository, b: ClaimRepository
) -> None:
    await a.claim([("chat", 3)])
    assert await b.release(("chat", 3)) is False
    assert await b.claim([("chat", 3)]) == set()


async def test_the_sweeper_finds_unfinished_chats_without_a_live_claim(
    pg: PgDatabase, a: ClaimRepository, b: ClaimRepository
) -> None:
    await store(pg, 1, 10)  # claimed by a: not for the sweeper
    await store(pg, 2, 20)  # nobody's
    await store(pg, 3, 30)  # a's lease ran out
    await store(pg, 4, None)  # no chat: its own key
    await store(pg, 5, 50)
    await InboxRepository(pg).finish(5, "delivered")  # finished: nothing to do
    await a.claim([("chat", 10), ("chat", 30)])
    await expire(pg, ("chat", 30))

    assert sorted(await b.unclaimed()) == [("chat", 20), ("chat", 30), ("update", 4)]


async def test_fenced_inbox_writes_move_a_row_only_for_the_live_claims_owner(
    pg: PgDatabase, a: ClaimRepository
) -> None:
    await store(pg, 1, 10)
    await a.claim([("chat", 10)])
    move = "UPDATE updates SET reason = ? WHERE update_id = 1 " + FENCE

    assert await pg.write(move, ("by-b", "instance-b")) == 0
    assert await pg.write(move, ("by-a", "instance-a")) == 1
    await expire(pg, ("chat", 10))
    assert await pg.write(move, ("late-a", "instance-a")) == 0  # a zombie: its lease is over


async def test_leaving_gives_back_every_claim_and_the_heartbeat(
    a: ClaimRepository, b: ClaimRepository
) -> None:
    await a.claim([("chat", 1), ("chat", 2)])
    await a.heartbeat(live_within_s=LEASE_S)

    await a.leave()

    assert await b.claim([("chat", 1), ("chat", 2)]) == {("chat", 1), ("chat", 2)}
    assert (await b.heartbeat(live_within_s=LEASE_S)).live_instances == 1
