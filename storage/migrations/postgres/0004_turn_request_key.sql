-- PostgreSQL twin of ../0004_turn_request_key.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes), identity columns for rowids.
-- An answered turn remembers which request it answered (e.g. "telegram:<update_id>"),
-- so a request replayed after a crash gets the stored answer instead of a second model
-- call and a second history pair. Failed turns may repeat: only answered ones are unique.
ALTER TABLE turns ADD COLUMN request_key TEXT;
CREATE UNIQUE INDEX turns_answered_request ON turns(request_key)
    WHERE request_key IS NOT NULL AND status = 'answered';
-- finding the answer of such a turn
CREATE INDEX messages_turn ON messages(turn_id) WHERE turn_id IS NOT NULL;
