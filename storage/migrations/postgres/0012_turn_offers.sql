-- PostgreSQL twin of ../0012_turn_offers.sql: the same schema.
-- What a turn offered the customer besides its text (share your phone, a person will
-- answer), as a JSON array of typed offers (services/offers.py); NULL when nothing. Stored
-- with the turn, so a turn replayed after a crash (stored, but its reply not yet) gives
-- the customer exactly the reply of the first run, buttons included.
ALTER TABLE turns ADD COLUMN offers TEXT;
