"""SQL for the shop data the tools read: orders, return policies, FAQ, shop texts, lookups.

No business rules live here: who may see an order, how product names are normalised
and how many lookups are allowed are decided in `tools/` (the shop's data rules and
demo data in `tools.shop`); this module stores and fetches rows exactly as it is told.
Every write runs in `Database.transaction()`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from storage.backend import Database, Tx
from storage.shop_records import (
    ORDER_COLUMNS,
    FaqRecord,
    ImportCounts,
    OrderRecord,
    OrderUpsert,
    ReturnPolicyRecord,
    ReturnPolicyUpsert,
)

__all__ = [
    "ORDER_COLUMNS",
    "FaqRecord",
    "ImportCounts",
    "OrderRecord",
    "OrderUpsert",
    "ReturnPolicyRecord",
    "ReturnPolicyUpsert",
    "ShopRepository",
]


# the advisory lock key of every write that reads the shop tables to decide what to write
SHOP_DATA_LOCK = "shop-data"


class ShopRepository:
    """Reads and writes of the shop tables on one `Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- orders -------------------------------------------------------------------

    async def get_order(self, order_id: str) -> OrderRecord | None:
        row = await self._db.fetch_one(
            "SELECT order_id, status, owner_telegram_id, owner_phone, updated_at, pickup_point,"
            " expected_date FROM orders WHERE order_id = ?",
            (order_id,),
        )
        if row is None:
            return None
        return OrderRecord(
            order_id=row["order_id"],
            status=row["status"],
            owner_telegram_id=row["owner_telegram_id"],
            owner_phone=row["owner_phone"],
            updated_at=row["updated_at"],
            pickup_point=row["pickup_point"],
            expected_date=row["expected_date"],
        )

    async def record_order_lookup(
        self, *, user_id: int, order_id: str, now: float, since: float, max_distinct: int
    ) -> bool:
        """Record that `user_id` looked up `order_id` unless that would exceed a bound.

        Atomically: an order this user already looked up after `since` is refreshed and
        allowed; a new one is recorded only while fewer than `max_distinct` distinct
        orders were looked up after `since`. Returns whether the lookup was recorded.
        Rows older than `since` are dropped on the way.
        """
        async with self._db.transaction() as tx:
            # the count and the insert must not interleave with the same user's lookup
            # in another chat (on another instance)
            await tx.lock(f"lookups:{user_id}")
            await tx.execute(
                "DELETE FROM order_lookups WHERE user_id = ? AND looked_up_at <= ?",
                (user_id, since),
            )
            seen = (
                await tx.fetch_one(
                    "SELECT 1 FROM order_lookups WHERE user_id = ? AND order_id = ?",
                    (user_id, order_id),
                )
                is not None
            )
            if not seen:
                row = await tx.fetch_one(
                    "SELECT COUNT(*) FROM order_lookups WHERE user_id = ?", (user_id,)
                )
                if row is not None and int(row[0]) >= max_distinct:
                    return False
            await tx.execute(
                "INSERT INTO order_lookups(user_id, order_id, looked_up_at) VALUES (?, ?, ?)"
                " ON CONFLICT(user_id, order_id)"
                " DO UPDATE SET looked_up_at = excluded.looked_up_at",
                (user_id, order_id, now),
            )
            return True

    # -- verified phones (a customer's own number, shared as their Telegram contact) ----

    async def get_verified_phone(self, user_id: int) -> str | None:
        row = await self._db.fetch_one(
            "SELECT phone FROM verified_phones WHERE user_id = ?", (user_id,)
        )
        return None if row is None else str(row["phone"])

    async def set_verified_phone(self, user_id: int, phone: str, *, now: float) -> None:
        """Store `phone` as `user_id`'s verified number, replacing an earlier one."""
        await self._db.write(
            "INSERT INTO verified_phones(user_id, phone, verified_at) VALUES (?, ?, ?)"
            " ON CONFLICT(user_id) DO UPDATE SET phone = excluded.phone,"
            " verified_at = excluded.verified_at",
            (user_id, phone, now),
        )

    async def delete_verified_phone(self, user_id: int) -> bool:
        """Forget `user_id`'s verified number; False if none was stored."""
        changed = await self._db.write("DELETE FROM verified_phones WHERE user_id = ?", (user_id,))
        return bool(changed)

    # -- return policies and texts ------------------------------------------------

    async def find_return_policy(self, key: str) -> ReturnPolicyRecord | None:
        """The policy whose product name equals `key`, else the one with that alias."""
        row = await self._db.fetch_one(
            "SELECT product, display_name, return_days, conditions FROM return_policies"
            " WHERE product = ?",
            (key,),
        )
        if row is None:
            row = await self._db.fetch_one(
                "SELECT p.product, p.display_name, p.return_days, p.conditions"
                " FROM return_policy_aliases AS a"
                " JOIN return_policies AS p ON p.product = a.product WHERE a.alias = ?",
                (key,),
            )
        if row is None:
            return None
        aliases = await self._db.fetch_all(
            "SELECT alias FROM return_policy_aliases WHERE product = ? "
            f"ORDER BY alias{self._db.dialect.collate_binary}",  # byte order on both backends
            (row["product"],),
        )
        return ReturnPolicyRecord(
            product=row["product"],
            display_name=row["display_name"],
            return_days=row["return_days"],
            conditions=row["conditions"],
            aliases=tuple(a["alias"] for a in aliases),
        )

    async def get_text(self, key: str) -> str | None:
        row = await self._db.fetch_one("SELECT value FROM shop_texts WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    # -- FAQ ----------------------------------------------------------------------

    async def find_faq_entries(self, keys: Sequence[str]) -> dict[str, FaqRecord]:
        """The entries whose key or one of whose aliases is in `keys`, by the matched key.

        `keys` is bounded by the caller (a question's word runs, a few hundred at most).
        """
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        marks = ", ".join("?" for _ in wanted)
        rows = await self._db.fetch_all(
            "SELECT m.matched, e.key, e.topic, e.answer FROM ("
            f" SELECT key AS entry, key AS matched FROM faq_entries WHERE key IN ({marks})"
            " UNION ALL"
            f" SELECT key AS entry, alias AS matched FROM faq_aliases WHERE alias IN ({marks})"
            ") AS m JOIN faq_entries AS e ON e.key = m.entry",
            (*wanted, *wanted),
        )
        return {
            row["matched"]: FaqRecord(key=row["key"], topic=row["topic"], answer=row["answer"])
            for row in rows
        }

    async def faq_topics(self, limit: int) -> list[str]:
        """The first `limit` topics, in the order the shop listed them."""
        rows = await self._db.fetch_all(
            f"SELECT topic FROM faq_entries ORDER BY position, key{self._db.dialect.collate_binary}"
            " LIMIT ?",
            (limit,),
        )
        return [str(row["topic"]) for row in rows]

    async def has_orders_except(self, order_ids: Collection[str]) -> bool:
        """Whether any order other than `order_ids` is stored."""
        marks = ",".join("?" * len(order_ids)) or "NULL"
        row = await self._db.fetch_one(
            f"SELECT EXISTS (SELECT 1 FROM orders WHERE order_id NOT IN ({marks}))",
            tuple(order_ids),
        )
        return bool(row and row[0])

    async def seed_faq_if_empty(self, entries: Sequence[FaqRecord]) -> bool:
        """Insert `entries` (with their aliases) if the FAQ is empty; True if inserted."""
        async with self._db.transaction() as tx:
            await tx.lock(SHOP_DATA_LOCK)
            if not entries or not await _is_empty(tx, "faq_entries"):
                return False
            await _insert_faq(tx, entries)
        return True

    # -- seeding and import --------------------------------------------------------

    async def seed_if_empty(
        self, *, orders: Sequence[OrderRecord], policies: Sequence[ReturnPolicyRecord]
    ) -> bool:
        """Insert `orders` if the orders table is empty, `policies` (with their aliases)
        if the policies table is empty, in one transaction.

        Returns True when anything was inserted; never touches a table that has rows,
        so data already there (a shop's real data) is never mixed with seed data.
        """
        async with self._db.transaction() as tx:
            # two instances starting together must not both find the tables empty
            await tx.lock(SHOP_DATA_LOCK)
            seed_orders = bool(orders) and await _is_empty(tx, "orders")
            seed_policies = bool(policies) and await _is_empty(tx, "return_policies")
            if seed_orders:
                await tx.executemany(
                    "INSERT INTO orders(order_id, status, owner_telegram_id, owner_phone,"
                    " updated_at, pickup_point, expected_date) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            order.order_id,
                            order.status,
                            order.owner_telegram_id,
                            order.owner_phone,
                            order.updated_at,
                            order.pickup_point,
                            order.expected_date,
                        )
                        for order in orders
                    ],
                )
            if seed_policies:
                await tx.executemany(
                    "INSERT INTO return_policies(product, display_name, return_days,"
                    " conditions) VALUES (?, ?, ?, ?)",
                    [(p.product, p.display_name, p.return_days, p.conditions) for p in policies],
                )
                await tx.executemany(
                    "INSERT INTO return_policy_aliases(alias, product) VALUES (?, ?)",
                    [(alias, p.product) for p in policies for alias in p.aliases],
                )
        return seed_orders or seed_policies

    async def import_shop_data(
        self,
        *,
        orders: Sequence[OrderUpsert],
        policies: Sequence[ReturnPolicyUpsert],
        texts: Mapping[str, str | None],
        faq: Sequence[FaqRecord] | None = None,
    ) -> ImportCounts:
        """Upsert everything in ONE transaction: either all of it is written or none.

        `texts` maps a shop-text key to its new value, or None to remove it. An alias is
        moved to the policy that lists it, and a policy given with aliases has exactly
        those aliases afterwards. `faq`, when given, replaces the whole FAQ (entries not
        in it are removed); None leaves the stored FAQ as it is.
        """
        counts = ImportCounts()
        async with self._db.transaction() as tx:
            await tx.lock(SHOP_DATA_LOCK)
            for order in orders:
                columns = [c for c in ORDER_COLUMNS if c in order.values]
                unknown = set(order.values) - set(ORDER_COLUMNS)
                if unknown:
                    raise ValueError(f"unknown order columns: {sorted(unknown)}")
                params = [order.values[c] for c in columns]
                exists = (
                    await tx.fetch_one("SELECT 1 FROM orders WHERE order_id = ?", (order.order_id,))
                    is not None
                )
                if exists:
                    if columns:
                        assignments = ", ".join(f"{c} = ?" for c in columns)
                        await tx.execute(
                            f"UPDATE orders SET {assignments} WHERE order_id = ?",
                            (*params, order.order_id),
                        )
                    counts.orders_updated += 1
                else:
                    names = ", ".join(("order_id", *columns))
                    marks = ", ".join("?" for _ in range(len(columns) + 1))
                    await tx.execute(
                        f"INSERT INTO orders({names}) VALUES ({marks})",
                        (order.order_id, *params),
                    )
                    counts.orders_inserted += 1
            for policy in policies:
                exists = (
                    await tx.fetch_one(
                        "SELECT 1 FROM return_policies WHERE product = ?", (policy.product,)
                    )
                    is not None
                )
                await tx.execute(
                    "INSERT INTO return_policies(product, display_name, return_days, conditions)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT(product) DO UPDATE SET"
                    " display_name = excluded.display_name, return_days = excluded.return_days,"
                    " conditions = excluded.conditions",
                    (policy.product, policy.display_name, policy.return_days, policy.conditions),
                )
                if policy.aliases is not None:
                    await tx.execute(
                        "DELETE FROM return_policy_aliases WHERE product = ?", (policy.product,)
                    )
                    for alias in policy.aliases:
                        await tx.execute(
                            "INSERT INTO return_policy_aliases(alias, product) VALUES (?, ?)"
                            " ON CONFLICT(alias) DO UPDATE SET product = excluded.product",
                            (alias, policy.product),
                        )
                if exists:
                    counts.policies_updated += 1
                else:
                    counts.policies_inserted += 1
            for key, value in texts.items():
                if value is None:
                    await tx.execute("DELETE FROM shop_texts WHERE key = ?", (key,))
                    counts.texts_cleared.append(key)
                else:
                    await tx.execute(
                        "INSERT INTO shop_texts(key, value) VALUES (?, ?)"
                        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        (key, value),
                    )
                    counts.texts_set.append(key)
            if faq is not None:
                await _replace_faq(tx, faq, counts)
        return counts


async def _insert_faq(tx: Tx, entries: Sequence[FaqRecord]) -> None:
    await tx.executemany(
        "INSERT INTO faq_entries(key, topic, answer, position) VALUES (?, ?, ?, ?)",
        [(e.key, e.topic, e.answer, position) for position, e in enumerate(entries)],
    )
    await tx.executemany(
        "INSERT INTO faq_aliases(alias, key) VALUES (?, ?)",
        [(alias, e.key) for e in entries for alias in e.aliases],
    )


async def _replace_faq(tx: Tx, entries: Sequence[FaqRecord], counts: ImportCounts) -> None:
    """Make the FAQ exactly `entries` (inside the caller's transaction) and count."""
    before = {str(row[0]) for row in await tx.fetch_all("SELECT key FROM faq_entries")}
    after = {entry.key for entry in entries}
    await tx.execute("DELETE FROM faq_aliases")
    await tx.execute("DELETE FROM faq_entries")
    await _insert_faq(tx, entries)
    counts.faq_inserted = len(after - before)
    counts.faq_updated = len(after & before)
    counts.faq_removed = len(before - after)


async def _is_empty(tx: Tx, table: str) -> bool:
    """Whether `table` (a fixed name from this module, never input) has no rows."""
    row = await tx.fetch_one(f"SELECT COUNT(*) FROM {table}")
    return row is None or row[0] == 0
