-- PostgreSQL twin of ../0019_action_requests.sql (ids BIGINT, times DOUBLE PRECISION).
CREATE TABLE action_requests (
    operation_id  TEXT PRIMARY KEY,
    order_number  TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('open', 'refusing', 'done', 'refused')),
    created_at    DOUBLE PRECISION NOT NULL,
    escalated_at  DOUBLE PRECISION,
    refusing_by   BIGINT,
    refusing_chat BIGINT,
    refusal       TEXT,
    answered_by   BIGINT,
    answered_at   DOUBLE PRECISION
);
CREATE INDEX action_requests_open ON action_requests(status, created_at);
