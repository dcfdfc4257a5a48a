-- PostgreSQL twin of ../0020_outgoing_messages.sql (ids BIGINT, times DOUBLE PRECISION).
CREATE TABLE outgoing_messages (
    message_key  TEXT PRIMARY KEY,
    chat_id      BIGINT NOT NULL,
    html         TEXT NOT NULL,
    plain        TEXT NOT NULL,
    reply_markup TEXT,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'unknown')),
    attempts     BIGINT NOT NULL DEFAULT 0,
    next_at      DOUBLE PRECISION NOT NULL,
    created_at   DOUBLE PRECISION NOT NULL,
    finished_at  DOUBLE PRECISION,
    message_id   BIGINT,
    reason       TEXT
);
CREATE INDEX outgoing_messages_due ON outgoing_messages(status, next_at);
