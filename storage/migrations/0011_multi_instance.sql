-- Issue 20: several instances on one PostgreSQL database. Their coordination tables exist
-- only in the PostgreSQL twin (postgres/0011_multi_instance.sql); SQLite keeps one process,
-- so here the number only gets the index with which a chat's worker finds its next
-- unfinished update (storage/inbox.py) without scanning the other chats' ones.
CREATE INDEX updates_unfinished_chat ON updates(chat_id, received_at, update_id)
    WHERE status IN ('pending', 'answered');
