-- Messages the bot sends on its own, not as the reply to an update (what the actions'
-- sweeper tells a customer, the staff's reminders and lines): stored before they are
-- sent, in the same transaction as the change they tell of, then delivered, retried
-- while Telegram cannot be reached, and sent once. One row per message, keyed by what it
-- tells (e.g. "action:<op>:customer"), so storing it twice stores it once.
-- `status`: pending -> delivered | failed (certainly not sent) | unknown (the answer was
-- lost: never resent blindly). `next_at`: when a pending one may be tried (a try takes it
-- by moving `next_at` on, so two instances never send it at once).
CREATE TABLE outgoing_messages (
    message_key  TEXT PRIMARY KEY,
    chat_id      INTEGER NOT NULL,
    html         TEXT NOT NULL,
    plain        TEXT NOT NULL,
    reply_markup TEXT,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'unknown')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      REAL NOT NULL,
    created_at   REAL NOT NULL,
    finished_at  REAL,
    message_id   INTEGER,
    reason       TEXT
);
CREATE INDEX outgoing_messages_due ON outgoing_messages(status, next_at);
