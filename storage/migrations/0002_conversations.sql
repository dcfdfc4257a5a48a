-- Conversations and the records behind /stats. Times are unix seconds (REAL, UTC).
CREATE TABLE sessions (
    id           INTEGER PRIMARY KEY,
    chat_id      INTEGER NOT NULL,
    opened_at    REAL NOT NULL,
    closed_at    REAL,
    close_reason TEXT                    -- 'reset' when closed by /new
);
CREATE UNIQUE INDEX sessions_open_per_chat ON sessions(chat_id) WHERE closed_at IS NULL;
CREATE INDEX sessions_closed_at ON sessions(closed_at) WHERE closed_at IS NOT NULL;

CREATE TABLE messages (
    id         INTEGER PRIMARY KEY,      -- the order of the conversation
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content    TEXT NOT NULL,
    turn_id    TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX messages_session ON messages(session_id, id);

CREATE TABLE summaries (
    session_id        INTEGER PRIMARY KEY REFERENCES sessions(id),
    content           TEXT NOT NULL,
    covers_message_id INTEGER NOT NULL,  -- the last message folded into the summary
    prompt            TEXT NOT NULL,     -- summary prompt id@version
    updated_at        REAL NOT NULL
);

CREATE TABLE turns (
    id                TEXT PRIMARY KEY,
    session_id        INTEGER NOT NULL REFERENCES sessions(id),
    chat_id           INTEGER NOT NULL,
    user_id           INTEGER NOT NULL,
    started_at        REAL NOT NULL,
    duration_ms       REAL NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('answered', 'failed')),
    stop_reason       TEXT,              -- completed | truncated | refused | error
    error_code        TEXT,              -- set when status = 'failed'
    model_steps       INTEGER NOT NULL,
    tool_calls        INTEGER NOT NULL,
    prompt_tokens     INTEGER,           -- NULL = unknown, never 0 for unknown
    completion_tokens INTEGER,
    total_tokens      INTEGER,
    prompt            TEXT NOT NULL      -- system prompt id@version
);
CREATE INDEX turns_started_at ON turns(started_at);

CREATE TABLE tool_calls (
    id          INTEGER PRIMARY KEY,
    turn_id     TEXT REFERENCES turns(id),
    session_id  INTEGER,
    chat_id     INTEGER NOT NULL,
    user_id     INTEGER NOT NULL,
    call_id     TEXT NOT NULL,
    tool_name   TEXT NOT NULL,
    started_at  REAL NOT NULL,
    duration_ms REAL NOT NULL,
    status      TEXT NOT NULL CHECK (status IN
                  ('success', 'business_error', 'rejected', 'timeout', 'technical_error')),
    error_code  TEXT
);
CREATE INDEX tool_calls_started_at ON tool_calls(started_at, tool_name, status);

CREATE TABLE llm_calls (
    id                INTEGER PRIMARY KEY,
    turn_id           TEXT,
    session_id        INTEGER,
    purpose           TEXT NOT NULL CHECK (purpose IN ('chat', 'summary')),
    requested_model   TEXT NOT NULL,     -- the primary model asked first
    model             TEXT,              -- the model that answered (NULL when none did)
    fallback          INTEGER NOT NULL DEFAULT 0,  -- 1 when a fallback model answered
    started_at        REAL NOT NULL,
    latency_ms        REAL NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    error_code        TEXT,
    finish_reason     TEXT,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    total_tokens      INTEGER,
    response_id       TEXT
);
CREATE INDEX llm_calls_started_at ON llm_calls(started_at, purpose);

-- indexes for /stats (storage/stats.py): every figure is an index range or walk, never a
-- sort of the whole history. Partial indexes hold only the rare rows a figure needs.
CREATE INDEX tool_calls_stats_status
    ON tool_calls(tool_name, status, started_at, error_code, duration_ms);
CREATE INDEX tool_calls_stats_duration ON tool_calls(tool_name, duration_ms, started_at, status);
CREATE INDEX turns_stats_totals
    ON turns(started_at, model_steps, tool_calls, prompt_tokens, completion_tokens);
CREATE INDEX turns_stats_unusual ON turns(started_at, status, stop_reason, error_code)
    WHERE status <> 'answered' OR stop_reason IS NOT 'completed';
CREATE INDEX turns_stats_chat ON turns(chat_id, started_at);
CREATE INDEX turns_stats_user ON turns(user_id, started_at);
CREATE INDEX turns_stats_duration ON turns(duration_ms, started_at);
CREATE INDEX llm_calls_stats_fallback ON llm_calls(started_at)
    WHERE purpose = 'chat' AND fallback = 1;
CREATE INDEX llm_calls_stats_summary ON llm_calls(started_at, status) WHERE purpose = 'summary';
CREATE INDEX sessions_stats_reset ON sessions(closed_at) WHERE close_reason = 'reset';
