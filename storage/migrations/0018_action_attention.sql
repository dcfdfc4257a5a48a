-- Actions whose outcome stays unknown end (issue 41): a background sweeper asks the shop
-- again with the same operation id, `attempts` times at most (`next_try_at` the next
-- one), then the action `needs_attention`: a person checks, told with the shop's last
-- answer (`last_answer`, a short code, never the customer's words). `language` is the
-- customer's, noted at the press, for what the sweeper tells them later. SQLite cannot
-- change a CHECK in place: the table is rebuilt with the new status allowed.
CREATE TABLE pending_actions_new (
    operation_id  TEXT PRIMARY KEY,
    action        TEXT NOT NULL,
    order_number  TEXT NOT NULL,
    chat_id       INTEGER NOT NULL,
    user_id       INTEGER NOT NULL,
    arguments     TEXT NOT NULL,
    effect        TEXT NOT NULL,
    done_words    TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN
                    ('pending', 'confirmed', 'executing', 'done', 'failed', 'declined',
                     'expired', 'needs_attention')),
    reason        TEXT,
    reference     TEXT,
    press_update  INTEGER,
    turn_id       TEXT,
    created_at    REAL NOT NULL,
    expires_at    REAL NOT NULL,
    updated_at    REAL NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_try_at   REAL,
    last_answer   TEXT,
    language      TEXT
);
INSERT INTO pending_actions_new (
    operation_id, action, order_number, chat_id, user_id, arguments, effect, done_words,
    status, reason, reference, press_update, turn_id, created_at, expires_at, updated_at)
SELECT operation_id, action, order_number, chat_id, user_id, arguments, effect, done_words,
    status, reason, reference, press_update, turn_id, created_at, expires_at, updated_at
FROM pending_actions;
DROP TABLE pending_actions;
ALTER TABLE pending_actions_new RENAME TO pending_actions;
CREATE INDEX pending_actions_order ON pending_actions(order_number, status);
CREATE INDEX pending_actions_created ON pending_actions(created_at);
CREATE INDEX pending_actions_open ON pending_actions(status, updated_at);
