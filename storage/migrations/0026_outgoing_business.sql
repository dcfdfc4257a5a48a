-- A message the bot says on its own to a customer of the owner's business account (an
-- action's result found by the sweep) goes through that account's connection.
ALTER TABLE outgoing_messages ADD COLUMN business_connection_id TEXT;
