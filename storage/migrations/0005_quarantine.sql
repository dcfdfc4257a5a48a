-- Updates the inbox cannot store (an id beyond SQLite's 64-bit integers, a payload that
-- cannot be encoded) are recorded here instead, then acknowledged, so they never block
-- getUpdates or the webhook. Only the id, the time and a short reason code: never the
-- update itself (it holds the message text and the sender's name).
CREATE TABLE quarantined_updates (
    update_id   TEXT PRIMARY KEY,        -- decimal text: it may not fit an SQLite INTEGER
    received_at REAL NOT NULL,
    reason      TEXT NOT NULL            -- e.g. chat_id_out_of_range, payload_not_encodable
);
