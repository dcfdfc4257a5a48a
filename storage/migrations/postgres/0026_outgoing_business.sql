-- PostgreSQL twin of ../0026_outgoing_business.sql.
ALTER TABLE outgoing_messages ADD COLUMN business_connection_id TEXT;
