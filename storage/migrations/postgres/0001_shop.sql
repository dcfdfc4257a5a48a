-- PostgreSQL twin of ../0001_shop.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes), identity columns for rowids.
-- Shop data read by the tools: orders, return policies (with aliases), shop-wide texts,
-- and the per-caller order lookups that bound how many distinct orders one user may probe.
CREATE TABLE orders (
    order_id          TEXT PRIMARY KEY,
    status            TEXT NOT NULL CHECK (status IN
                        ('processing', 'in_transit', 'ready_for_pickup', 'delivered', 'cancelled')),
    owner_telegram_id BIGINT,
    updated_at        TEXT,
    pickup_point      TEXT,
    expected_date     TEXT
);
CREATE INDEX orders_owner ON orders(owner_telegram_id);

CREATE TABLE return_policies (
    product      TEXT PRIMARY KEY,       -- normalised name (trimmed, casefolded, single spaces)
    display_name TEXT NOT NULL,
    return_days  BIGINT NOT NULL CHECK (return_days >= 0),
    conditions   TEXT NOT NULL
);

CREATE TABLE return_policy_aliases (
    alias   TEXT PRIMARY KEY,            -- normalised like return_policies.product
    product TEXT NOT NULL REFERENCES return_policies(product) ON DELETE CASCADE
);

CREATE TABLE shop_texts (
    key   TEXT PRIMARY KEY,              -- e.g. general_return_policy
    value TEXT NOT NULL
);

CREATE TABLE order_lookups (
    user_id      BIGINT NOT NULL,
    order_id     TEXT NOT NULL,
    looked_up_at DOUBLE PRECISION NOT NULL,  -- unix seconds of the latest lookup of this pair
    PRIMARY KEY (user_id, order_id)
);
CREATE INDEX order_lookups_recent ON order_lookups(user_id, looked_up_at);
