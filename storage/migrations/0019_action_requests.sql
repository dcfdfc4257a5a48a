-- Requests to the shop's people: with imported data (SHOP_BACKEND=local) the bot cannot
-- change the shop, so a confirmed action becomes a request the admins answer with
-- Done or Refuse. One row per action, keyed by its operation id; `status` moves
-- open -> (refusing: a person pressed Refuse and is asked the reason) -> done | refused,
-- each move one conditional update, so two people pressing move it once.
-- `escalated_at`: the one reminder sent when nobody answered in time.
CREATE TABLE action_requests (
    operation_id  TEXT PRIMARY KEY,
    order_number  TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('open', 'refusing', 'done', 'refused')),
    created_at    REAL NOT NULL,
    escalated_at  REAL,
    refusing_by   INTEGER,
    refusing_chat INTEGER,
    refusal       TEXT,
    answered_by   INTEGER,
    answered_at   REAL
);
CREATE INDEX action_requests_open ON action_requests(status, created_at);
