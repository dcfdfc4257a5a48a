-- A message the bot says on its own to a customer of the owner's business account (an
-- action's result found by the sweep) goes through that account's connection.
ALTER TABLE outgoing_messages ADD COLUMN business_connection_id TEXT;
-- An approval draft's turn: a discarded draft leaves the history, a rewritten one is
-- kept as sent.
ALTER TABLE business_drafts ADD COLUMN turn_id TEXT;
