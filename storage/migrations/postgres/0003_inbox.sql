-- PostgreSQL twin of ../0003_inbox.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes), identity columns for rowids.
-- The durable inbox: every Telegram update is recorded here (committed) before Telegram
-- gets its acknowledgement, and the reply is stored before it is sent.
-- status: pending → answered (reply stored) → delivered | failed | unknown; or ignored
-- (nothing to answer). Times are unix seconds (UTC).
CREATE TABLE updates (
    update_id   BIGINT PRIMARY KEY,      -- Telegram's id: the key that makes redelivery a no-op
    chat_id     BIGINT,                  -- NULL for update types without a chat
    user_id     BIGINT,
    received_at DOUBLE PRECISION NOT NULL,
    payload     TEXT NOT NULL,           -- the update as Telegram sent it (JSON)
    status      TEXT NOT NULL DEFAULT 'pending' CHECK (status IN
                  ('pending', 'answered', 'delivered', 'failed', 'unknown', 'ignored')),
    reply       TEXT,                    -- JSON list of outgoing messages (html, plain)
    message_ids TEXT NOT NULL DEFAULT '[]',  -- JSON list: Telegram ids of the parts delivered
    turn_id     TEXT,
    reason      TEXT,                    -- why failed / unknown / ignored (a short code)
    answered_at DOUBLE PRECISION,
    finished_at DOUBLE PRECISION
);
CREATE INDEX updates_unfinished ON updates(received_at, update_id)
    WHERE status IN ('pending', 'answered');
CREATE INDEX updates_received_at ON updates(received_at);
