-- Order updates (issue 34): a customer subscribes to one of their own orders and hears
-- when it moves. Times are unix seconds (REAL, UTC); an order's `updated_at` is kept the
-- same way, so "newer than what the customer was told" is a number comparison.
CREATE TABLE order_subscriptions (
    id              INTEGER PRIMARY KEY,
    chat_id         INTEGER NOT NULL,      -- the customer's private chat with the bot
    user_id         INTEGER NOT NULL,      -- the Telegram user who subscribed (the owner)
    order_number    TEXT NOT NULL,
    language        TEXT NOT NULL,         -- the customer's language when they subscribed
    active          INTEGER NOT NULL DEFAULT 1,
    created_at      REAL NOT NULL,
    stopped_at      REAL,
    stop_reason     TEXT,                  -- 'customer' | 'blocked' | 'finished' | 'not_owner'
    told_status     TEXT NOT NULL,         -- the last status the customer was told
    told_updated_at REAL NOT NULL,         -- that status's updated_at (the shop's clock)
    checked_at      REAL                   -- the polling fallback's last read
);
CREATE UNIQUE INDEX order_subscriptions_per_chat ON order_subscriptions(chat_id, order_number);
CREATE INDEX order_subscriptions_active ON order_subscriptions(order_number) WHERE active = 1;

-- One row per change the customer is to be told, made in the transaction that moved
-- told_status: the unique key makes a second sighting of the same change a no-op.
CREATE TABLE order_notifications (
    id               INTEGER PRIMARY KEY,
    subscription_id  INTEGER NOT NULL,
    chat_id          INTEGER NOT NULL,
    order_number     TEXT NOT NULL,
    status           TEXT NOT NULL,
    order_updated_at REAL NOT NULL,
    language         TEXT NOT NULL,
    state            TEXT NOT NULL DEFAULT 'pending'
                       CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    reason           TEXT,
    created_at       REAL NOT NULL,
    finished_at      REAL
);
CREATE UNIQUE INDEX order_notifications_once
    ON order_notifications(subscription_id, status, order_updated_at);
CREATE INDEX order_notifications_due ON order_notifications(created_at) WHERE state = 'pending';
CREATE INDEX order_notifications_finished ON order_notifications(finished_at, state);

-- A shop's push (webhook), stored before it is acknowledged: only which order it names
-- (the order is read again from the shop before anyone is told anything).
CREATE TABLE shop_events (
    id           INTEGER PRIMARY KEY,
    source       TEXT NOT NULL,            -- 'http' | 'shopify' | 'woocommerce'
    event_key    TEXT NOT NULL,            -- the platform's event id, or a digest of the body
    order_number TEXT NOT NULL,
    received_at  REAL NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    processed_at REAL
);
CREATE UNIQUE INDEX shop_events_once ON shop_events(source, event_key);
CREATE INDEX shop_events_due ON shop_events(received_at) WHERE processed_at IS NULL;
