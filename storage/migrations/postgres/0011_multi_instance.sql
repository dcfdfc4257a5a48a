-- PostgreSQL twin of ../0011_multi_instance.sql, and more: several instances of the bot
-- share this database (issue 20). Every lease and heartbeat time is the DATABASE's clock
-- (extract(epoch FROM clock_timestamp())), so the hosts' clocks cannot skew a lease.

-- One row per running instance, kept fresh by its heartbeat: how many instances are alive
-- (each takes its share of Telegram's global send budget).
CREATE TABLE instances (
    id           TEXT PRIMARY KEY,               -- INSTANCE_ID
    started_at   DOUBLE PRECISION NOT NULL,      -- unix seconds, database clock
    heartbeat_at DOUBLE PRECISION NOT NULL       -- unix seconds, database clock
);

-- Which instance works on a chat now: one row per busy chat, held by a renewed lease, so
-- one chat's updates are answered one at a time, in order, whichever instance got them;
-- a dead instance's claims expire and another instance finishes its work.
CREATE TABLE chat_claims (
    claim_key   TEXT PRIMARY KEY,                -- 'chat:<chat_id>' | 'update:<update_id>'
    owner       TEXT NOT NULL,                   -- instances.id
    lease_until DOUBLE PRECISION NOT NULL        -- unix seconds, database clock
);
CREATE INDEX chat_claims_owner ON chat_claims(owner);

-- a chat's next unfinished update (as in SQLite's 0011)
CREATE INDEX updates_unfinished_chat ON updates(chat_id, received_at, update_id)
    WHERE status IN ('pending', 'answered');
