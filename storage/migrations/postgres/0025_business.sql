-- PostgreSQL twin of ../0020_business.sql (ids BIGINT, times DOUBLE PRECISION).
-- Business mode: the bot answers in the chats of an owner's Telegram Business account.
-- `business_connections`: one row per connection Telegram told about (business_connection
-- updates, or getBusinessConnection), only for the configured owners; `can_reply` and
-- `enabled` as Telegram last said; `approval`: drafts go to the owner first.
CREATE TABLE business_connections (
    connection_id TEXT PRIMARY KEY,
    owner_id      BIGINT NOT NULL,
    owner_chat_id BIGINT NOT NULL,
    enabled       BIGINT NOT NULL,
    can_reply     BIGINT NOT NULL,
    approval      BIGINT NOT NULL DEFAULT 0,
    updated_at    DOUBLE PRECISION NOT NULL
);
-- One row per customer's chat of a connection: `conversation_id` is the chat's id in the
-- bot's own tables (sessions, turns, actions), apart from any bot chat with the same id;
-- `paused_until`: the owner wrote by hand, the bot stays silent until then.
CREATE TABLE business_chats (
    conversation_id  BIGINT PRIMARY KEY,
    connection_id    TEXT NOT NULL,
    chat_id          BIGINT NOT NULL,
    paused_until     DOUBLE PRECISION,
    last_incoming_at DOUBLE PRECISION
);
CREATE UNIQUE INDEX business_chats_by_chat ON business_chats(connection_id, chat_id);
-- Approval mode: the bot's answer waits for the owner's Send / Edit / Discard. `status`
-- moves waiting -> (editing) -> sent | discarded, each move one conditional update.
CREATE TABLE business_drafts (
    draft_id      TEXT PRIMARY KEY,
    connection_id TEXT NOT NULL,
    chat_id       BIGINT NOT NULL,
    message_id    BIGINT NOT NULL,
    text          TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('waiting', 'editing', 'sent', 'discarded')),
    created_at    DOUBLE PRECISION NOT NULL,
    asked_at      DOUBLE PRECISION NOT NULL,
    decided_at    DOUBLE PRECISION
);
CREATE INDEX business_drafts_editing ON business_drafts(connection_id, status);
