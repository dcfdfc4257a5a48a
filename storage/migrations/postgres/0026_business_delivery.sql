-- PostgreSQL twin of ../0026_business_delivery.sql.
ALTER TABLE outgoing_messages ADD COLUMN business_connection_id TEXT;
ALTER TABLE business_drafts ADD COLUMN turn_id TEXT;
