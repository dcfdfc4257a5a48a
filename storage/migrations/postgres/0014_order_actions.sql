-- PostgreSQL twin of ../0014_order_actions.sql (ids BIGINT, times DOUBLE PRECISION).
-- Actions a customer confirms (issue 32): one row per proposed action, keyed by its
-- operation id (the idempotency key the shop's backend gets). The row is written before
-- the confirmation card is sent and moves pending -> confirmed -> executing -> done |
-- failed | declined | expired; `press_update` is the inbox update of the press that
-- confirmed or declined it, so that update's handler, run again after a crash, resumes
-- instead of being taken for a second press.
CREATE TABLE pending_actions (
    operation_id  TEXT PRIMARY KEY,
    action        TEXT NOT NULL,             -- the definition's name, e.g. cancel_order
    order_number  TEXT NOT NULL,
    chat_id       BIGINT NOT NULL,
    user_id       BIGINT NOT NULL,          -- the customer the card was sent to
    arguments     TEXT NOT NULL,             -- JSON: what the backend call needs
    effect        TEXT NOT NULL,             -- JSON: the card's words per language
    done_words    TEXT NOT NULL,             -- JSON: the result's words per language
    status        TEXT NOT NULL CHECK (status IN
                    ('pending', 'confirmed', 'executing', 'done', 'failed', 'declined',
                     'expired')),
    reason        TEXT,                      -- a short code: why failed or expired
    reference     TEXT,                      -- the shop's id of what was made (a return)
    press_update  BIGINT,
    turn_id       TEXT,
    created_at    DOUBLE PRECISION NOT NULL,
    expires_at    DOUBLE PRECISION NOT NULL,
    updated_at    DOUBLE PRECISION NOT NULL
);
CREATE INDEX pending_actions_order ON pending_actions(order_number, status);
CREATE INDEX pending_actions_created ON pending_actions(created_at);

-- The local backend's own records of what it carried out, keyed by the operation id, so
-- a second call with the same id answers as the first did and never acts twice.
CREATE TABLE order_cancellations (
    operation_id TEXT PRIMARY KEY,
    order_id     TEXT NOT NULL,
    created_at   DOUBLE PRECISION NOT NULL
);
CREATE TABLE order_returns (
    operation_id TEXT PRIMARY KEY,
    order_id     TEXT NOT NULL,
    lines        TEXT NOT NULL,              -- JSON: [{"name", "quantity"}]
    reason       TEXT NOT NULL,              -- the customer's words (never logged)
    created_at   DOUBLE PRECISION NOT NULL
);
