-- Handoff to a human operator (issue 16). A customer's private chat gets one forum topic
-- in the operators' group (OPERATOR_CHAT_ID), reused for every later handoff; a handoff is
-- one episode from its request to its close. Times are unix seconds (REAL, UTC).
CREATE TABLE handoff_topics (
    chat_id          INTEGER PRIMARY KEY,  -- the customer's private chat with the bot
    operator_chat_id INTEGER NOT NULL,     -- the forum the topic lives in
    topic_id         INTEGER,              -- message_thread_id; NULL: (re)create on next use
    title            TEXT NOT NULL,        -- the topic's name (customer name, @username)
    language         TEXT NOT NULL,        -- the customer's language, for relayed notices
    created_at       REAL NOT NULL
);
CREATE UNIQUE INDEX handoff_topics_by_topic ON handoff_topics(operator_chat_id, topic_id)
    WHERE topic_id IS NOT NULL;

CREATE TABLE handoffs (
    id             INTEGER PRIMARY KEY,
    chat_id        INTEGER NOT NULL,
    source         TEXT NOT NULL CHECK (source IN ('command', 'button', 'model')),
    reason         TEXT,                   -- the model's short reason (request_human)
    started_at     REAL NOT NULL,
    briefed_at     REAL,                   -- the brief for the topic was stored (NULL: due)
    first_reply_at REAL,                   -- the first operator reply was stored
    closed_at      REAL,
    close_reason   TEXT                    -- 'command' (/close) | 'topic_closed'
);
CREATE UNIQUE INDEX handoffs_open_per_chat ON handoffs(chat_id) WHERE closed_at IS NULL;
CREATE INDEX handoffs_started_at ON handoffs(started_at, source);
CREATE INDEX handoffs_closed_at ON handoffs(closed_at) WHERE closed_at IS NOT NULL;
