-- PostgreSQL twin of ../0027_business_draft_cards.sql.
ALTER TABLE business_drafts ADD COLUMN operation_id TEXT;
ALTER TABLE business_drafts ADD COLUMN card TEXT;
ALTER TABLE business_drafts ADD COLUMN card_markup TEXT;
