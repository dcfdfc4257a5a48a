-- An approval draft's action card: the operation the turn proposed, the card's words and
-- its ✅/✖ keyboard, posted with the draft on Send (the action expires on Discard).
ALTER TABLE business_drafts ADD COLUMN operation_id TEXT;
ALTER TABLE business_drafts ADD COLUMN card TEXT;
ALTER TABLE business_drafts ADD COLUMN card_markup TEXT;
