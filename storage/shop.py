"""SQL for the shop data the tools read: orders, return policies, FAQ, shop texts, lookups.

No business rules live here: who may see an order, how product names are normalised
and how many lookups are allowed are decided in `tools/` (the shop's data rules and
demo data in `tools.shop`); this module stores and fetches rows exactly as it is told.
Every write runs in `Database.transaction()`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from storage.backend import Database, Row, Tx
from storage.shop_records import (
    ORDER_COLUMNS,
    DemoRemoved,
    FaqRecord,
    ImportCounts,
    OrderRecord,
    OrderUpsert,
    ProductRecord,
    ReturnPolicyRecord,
    ReturnPolicyUpsert,
)

__all__ = [
    "ORDER_COLUMNS",
    "DemoRemoved",
    "FaqRecord",
    "ImportCounts",
    "OrderRecord",
    "OrderUpsert",
    "ProductRecord",
    "ReturnPolicyRecord",
    "ReturnPolicyUpsert",
    "ShopRepository",
]


# the stored columns of an order, as `_order_record` reads them
_ORDER_READ = ", ".join(ORDER_COLUMNS)

# the advisory lock key of every write that reads the shop tables to decide what to write
SHOP_DATA_LOCK = "shop-data"


class ShopRepository:
    """Reads and writes of the shop tables on one `Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- orders -------------------------------------------------------------------

    async def get_order(self, order_id: str) -> OrderRecord | None:
        row = await self._db.fetch_one(
            f"SELECT order_id, {_ORDER_READ} FROM orders WHERE order_id = ?",
            (order_id,),
        )
        if row is None:
            return None
        return _order_record(row)

    async def orders_for_phone(self, phone: str, *, limit: int) -> list[OrderRecord]:
        """Orders whose `owner_phone` is this E.164 phone, the latest update first."""
        rows = await self._db.fetch_all(
            f"SELECT order_id, {_ORDER_READ} FROM orders WHERE owner_phone = ?"
            " ORDER BY updated_at DESC, order_id DESC LIMIT ?",
            (phone, limit),
        )
        return [_order_record(row) for row in rows]

    async def latest_orders(self, limit: int) -> list[OrderRecord]:
        """Up to `limit` orders, the latest update first (a simulation's copy of the shop)."""
        rows = await self._db.fetch_all(
            f"SELECT order_id, {_ORDER_READ} FROM orders"
            f" ORDER BY updated_at DESC, order_id{self._db.dialect.collate_binary} LIMIT ?",
            (limit,),
        )
        return [_order_record(row) for row in rows]

    async def record_order_lookup(
        self, *, user_id: int, order_id: str, now: float, since: float, max_distinct: int
    ) -> bool:
        """Record that `user_id` looked up `order_id` unless that would exceed a bound.

        Atomically: an order this user already looked up after `since` is refreshed and
        allowed; a new one is recorded only while fewer than `max_distinct` distinct
        orders were looked up after `since`. Returns whether the lookup was recorded.
        Rows older than `since` are dropped on the way.
        """
        # one call: every order question makes it, and on SQLite each round trip holds
        # the one writer. The lock keeps the count and the insert from interleaving with
        # the same user's lookup in another chat (on another instance).
        dialect = self._db.dialect
        changed = await self._db.write_all(
            [
                (
                    "DELETE FROM order_lookups WHERE user_id = ? AND looked_up_at <= ?",
                    (user_id, since),
                ),
                (
                    "INSERT INTO order_lookups(user_id, order_id, looked_up_at)"
                    f" SELECT CAST(? AS BIGINT), CAST(? AS TEXT), {dialect.float_param}"
                    " WHERE EXISTS (SELECT 1 FROM order_lookups"
                    " WHERE user_id = ? AND order_id = ?)"
                    " OR (SELECT COUNT(*) FROM order_lookups WHERE user_id = ?) < ?"
                    " ON CONFLICT(user_id, order_id)"
                    " DO UPDATE SET looked_up_at = excluded.looked_up_at",
                    (user_id, order_id, now, user_id, order_id, user_id, max_distinct),
                ),
            ],
            lock=f"lookups:{user_id}",
        )
        return changed[1] == 1

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

    async def first_return_policy(self) -> ReturnPolicyRecord | None:
        """The policy of the first product by its stored name (byte order), or None."""
        row = await self._db.fetch_one(
            "SELECT product FROM return_policies"
            f" ORDER BY product{self._db.dialect.collate_binary} LIMIT 1"
        )
        return None if row is None else await self.find_return_policy(str(row["product"]))

    async def return_policies(self, limit: int) -> list[ReturnPolicyRecord]:
        """Up to `limit` policies with their aliases, by product (byte order)."""
        rows = await self._db.fetch_all(
            "SELECT product, display_name, return_days, conditions FROM return_policies"
            f" ORDER BY product{self._db.dialect.collate_binary} LIMIT ?",
            (limit,),
        )
        aliases = await self._aliases("return_policy_aliases", "product")
        return [
            ReturnPolicyRecord(
                product=row["product"],
                display_name=row["display_name"],
                return_days=row["return_days"],
                conditions=row["conditions"],
                aliases=tuple(aliases.get(row["product"], ())),
            )
            for row in rows
        ]

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

    async def faq_entries(self) -> list[FaqRecord]:
        """The whole FAQ with its aliases, in the order the shop listed it."""
        rows = await self._db.fetch_all(
            "SELECT key, topic, answer FROM faq_entries"
            f" ORDER BY position, key{self._db.dialect.collate_binary}"
        )
        aliases = await self._aliases("faq_aliases", "key")
        return [
            FaqRecord(
                key=row["key"],
                topic=row["topic"],
                answer=row["answer"],
                aliases=tuple(aliases.get(row["key"], ())),
            )
            for row in rows
        ]

    async def _aliases(self, table: str, owner: str) -> dict[str, list[str]]:
        """Every alias of `table` by the row it names (`owner`), in byte order."""
        rows = await self._db.fetch_all(
            f"SELECT alias, {owner} FROM {table} ORDER BY alias{self._db.dialect.collate_binary}"
        )
        aliases: dict[str, list[str]] = {}
        for row in rows:
            aliases.setdefault(row[owner], []).append(row["alias"])
        return aliases

    async def faq_topics(self, limit: int) -> list[str]:
        """The first `limit` topics, in the order the shop listed them."""
        rows = await self._db.fetch_all(
            f"SELECT topic FROM faq_entries ORDER BY position, key{self._db.dialect.collate_binary}"
            " LIMIT ?",
            (limit,),
        )
        return [str(row["topic"]) for row in rows]

    # -- products -------------------------------------------------------------------

    async def products_version(self) -> tuple[int, int]:
        """Changes whenever the stored catalogue does (its size and newest row id): a
        reader keeps its parsed copy while this stays the same."""
        row = await self._db.fetch_one("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM products")
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    async def products(self) -> list[ProductRecord]:
        rows = await self._db.fetch_all(
            "SELECT product_id, document FROM products ORDER BY position, id"
        )
        return [ProductRecord(str(r["product_id"]), str(r["document"])) for r in rows]

    # -- the demo shop (tools.shop.demo) ---------------------------------------------

    async def seed_demo(
        self,
        *,
        orders: Sequence[OrderRecord],
        policies: Sequence[ReturnPolicyRecord],
        faq: Sequence[FaqRecord] = (),
        products: Sequence[ProductRecord] = (),
    ) -> bool:
        """Insert the demo rows, marked `demo`, into whichever of their tables is empty, in
        one transaction — only into a database without data of the shop's own (and never
        once the demo was retired). Returns True when anything was inserted."""
        async with self._db.transaction() as tx:
            # two instances starting together must not both find the tables empty
            await tx.lock(SHOP_DATA_LOCK)
            if await _holds_own_data(tx):
                return False
            seeded = False
            if orders and await _is_empty(tx, "orders"):
                await _insert_orders(tx, orders, demo=True)
                seeded = True
            if policies and await _is_empty(tx, "return_policies"):
                await _insert_policies(tx, policies, demo=True)
                seeded = True
            if faq and await _is_empty(tx, "faq_entries"):
                await _insert_faq(tx, faq, demo=True)
                seeded = True
            if products and await _is_empty(tx, "products"):
                await _insert_products(tx, products, demo=True)
                seeded = True
        return seeded

    async def holds_own_data(self) -> bool:
        """Whether the shop's own data is here: a row not marked demo, a shop text, or an
        import or demo removal done before (the demo is retired)."""
        row = await self._db.fetch_one(_OWN_DATA_SQL)
        return bool(row and row[0])

    async def holds_demo(self) -> bool:
        """Whether any demo row is stored."""
        row = await self._db.fetch_one(_DEMO_DATA_SQL)
        return bool(row and row[0])

    async def remove_demo(self, *, now: float | None = None) -> DemoRemoved:
        """Delete every demo row and retire the demo (it is never seeded again)."""
        async with self._db.transaction() as tx:
            await tx.lock(SHOP_DATA_LOCK)
            return await _remove_demo(tx, time.time() if now is None else now)

    # -- import -------------------------------------------------------------------

    async def import_shop_data(
        self,
        *,
        orders: Sequence[OrderUpsert],
        policies: Sequence[ReturnPolicyUpsert],
        texts: Mapping[str, str | None],
        faq: Sequence[FaqRecord] | None = None,
        products: Sequence[ProductRecord] | None = None,
        now: float | None = None,
    ) -> ImportCounts:
        """Upsert everything in ONE transaction: either all of it is written or none.

        `texts` maps a shop-text key to its new value, or None to remove it. An alias is
        moved to the policy that lists it, and a policy given with aliases has exactly
        those aliases afterwards. `faq`, when given, replaces the whole FAQ (entries not
        in it are removed); None leaves the stored FAQ as it is; `products` likewise
        replaces the whole catalogue. The shop's own data
        replaces the demo: every demo row is removed first and the demo is retired.
        """
        counts = ImportCounts()
        async with self._db.transaction() as tx:
            await tx.lock(SHOP_DATA_LOCK)
            counts.demo_removed = await _remove_demo(tx, time.time() if now is None else now)
            await _upsert_orders(tx, orders, counts)
            await _upsert_policies(tx, policies, counts)
            await _write_texts(tx, texts, counts)
            if faq is not None:
                await _replace_faq(tx, faq, counts)
            if products is not None:
                await _replace_products(tx, products, counts)
        return counts


async def _upsert_orders(tx: Tx, orders: Sequence[OrderUpsert], counts: ImportCounts) -> None:
    """Insert new orders, update only the given columns of known ones (an import may
    bring a status alone); a column the table lacks is refused before anything is written."""
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


async def _upsert_policies(
    tx: Tx, policies: Sequence[ReturnPolicyUpsert], counts: ImportCounts
) -> None:
    """Each policy whole; a policy given with aliases has exactly those afterwards (an
    alias another policy had moves here), one given without keeps its own."""
    for policy in policies:
        exists = (
            await tx.fetch_one("SELECT 1 FROM return_policies WHERE product = ?", (policy.product,))
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


async def _write_texts(tx: Tx, texts: Mapping[str, str | None], counts: ImportCounts) -> None:
    """Set the shop texts given a value; remove those given None (the owner cleared them)."""
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


_DEMO_TABLES = ("orders", "return_policies", "faq_entries", "products")
# fixed SQL (no input): whether a row of the shop's own, or a demo row, is stored
_OWN_DATA_SQL = "SELECT " + " OR ".join(
    [
        *(f"EXISTS (SELECT 1 FROM {table} WHERE demo = 0)" for table in _DEMO_TABLES),
        "EXISTS (SELECT 1 FROM shop_texts)",
        "EXISTS (SELECT 1 FROM demo_retired)",
    ]
)
_DEMO_DATA_SQL = "SELECT " + " OR ".join(
    f"EXISTS (SELECT 1 FROM {table} WHERE demo = 1)" for table in _DEMO_TABLES
)


def _order_record(row: Row) -> OrderRecord:
    return OrderRecord(order_id=row["order_id"], **{name: row[name] for name in ORDER_COLUMNS})


async def _holds_own_data(tx: Tx) -> bool:
    row = await tx.fetch_one(_OWN_DATA_SQL)
    return bool(row and row[0])


async def _remove_demo(tx: Tx, now: float) -> DemoRemoved:
    """Delete the demo rows (aliases first) and retire the demo, inside the caller's
    transaction."""
    await tx.execute(
        "DELETE FROM return_policy_aliases WHERE product IN"
        " (SELECT product FROM return_policies WHERE demo = 1)"
    )
    await tx.execute(
        "DELETE FROM faq_aliases WHERE key IN (SELECT key FROM faq_entries WHERE demo = 1)"
    )
    removed = DemoRemoved(
        orders=await tx.execute("DELETE FROM orders WHERE demo = 1"),
        policies=await tx.execute("DELETE FROM return_policies WHERE demo = 1"),
        faq=await tx.execute("DELETE FROM faq_entries WHERE demo = 1"),
        products=await tx.execute("DELETE FROM products WHERE demo = 1"),
    )
    await tx.execute(
        "INSERT INTO demo_retired(id, retired_at) VALUES (1, ?) ON CONFLICT(id) DO NOTHING",
        (now,),
    )
    return removed


async def _insert_orders(tx: Tx, orders: Sequence[OrderRecord], *, demo: bool) -> None:
    marks = ", ".join("?" for _ in ORDER_COLUMNS)
    await tx.executemany(
        f"INSERT INTO orders(order_id, {_ORDER_READ}, demo) VALUES (?, {marks}, ?)",
        [
            (order.order_id, *(getattr(order, name) for name in ORDER_COLUMNS), int(demo))
            for order in orders
        ],
    )


async def _insert_policies(tx: Tx, policies: Sequence[ReturnPolicyRecord], *, demo: bool) -> None:
    await tx.executemany(
        "INSERT INTO return_policies(product, display_name, return_days, conditions, demo)"
        " VALUES (?, ?, ?, ?, ?)",
        [(p.product, p.display_name, p.return_days, p.conditions, int(demo)) for p in policies],
    )
    await tx.executemany(
        "INSERT INTO return_policy_aliases(alias, product) VALUES (?, ?)",
        [(alias, p.product) for p in policies for alias in p.aliases],
    )


async def _insert_faq(tx: Tx, entries: Sequence[FaqRecord], *, demo: bool = False) -> None:
    await tx.executemany(
        "INSERT INTO faq_entries(key, topic, answer, position, demo) VALUES (?, ?, ?, ?, ?)",
        [(e.key, e.topic, e.answer, position, int(demo)) for position, e in enumerate(entries)],
    )
    await tx.executemany(
        "INSERT INTO faq_aliases(alias, key) VALUES (?, ?)",
        [(alias, e.key) for e in entries for alias in e.aliases],
    )


async def _insert_products(tx: Tx, products: Sequence[ProductRecord], *, demo: bool) -> None:
    await tx.executemany(
        "INSERT INTO products(product_id, document, position, demo) VALUES (?, ?, ?, ?)",
        [(p.product_id, p.document, position, int(demo)) for position, p in enumerate(products)],
    )


async def _replace_products(
    tx: Tx, products: Sequence[ProductRecord], counts: ImportCounts
) -> None:
    """Make the catalogue exactly `products` (inside the caller's transaction)."""
    await tx.execute("DELETE FROM products")
    await _insert_products(tx, products, demo=False)
    counts.products_replaced = len(products)


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
