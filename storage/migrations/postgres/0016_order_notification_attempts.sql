-- Order updates (issue 34): how many times a notification's send was started. A send cut
-- off by a stop (left 'sending') is tried once more at the next start, like an answer's
-- stored part; a second cut-off fails it, so a customer gets it at most twice, never
-- more, and a crash alone never loses it.
ALTER TABLE order_notifications ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
