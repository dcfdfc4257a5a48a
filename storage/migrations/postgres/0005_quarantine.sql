-- PostgreSQL twin of ../0005_quarantine.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes), identity columns for rowids.
-- Updates the inbox cannot store (an id beyond 64-bit integers, a payload that
-- cannot be encoded) are recorded here instead, then acknowledged, so they never block
-- getUpdates or the webhook. Only the id, the time and a short reason code: never the
-- update itself (it holds the message text and the sender's name).
CREATE TABLE quarantined_updates (
    update_id   TEXT PRIMARY KEY,        -- decimal text: it may not fit a BIGINT
    received_at DOUBLE PRECISION NOT NULL,
    reason      TEXT NOT NULL            -- e.g. chat_id_out_of_range, payload_not_encodable
);
