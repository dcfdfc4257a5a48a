-- Actions whose outcome stays unknown end (issue 41): a background sweeper asks the shop
-- again with the same operation id, `attempts` times at most (`next_try_at` the next
-- one), then the action `needs_attention`: a person checks, told with the shop's last
-- answer (`last_answer`, a short code, never the customer's words). `language` is the
-- customer's, noted at the press, for what the sweeper tells them later.
ALTER TABLE pending_actions DROP CONSTRAINT pending_actions_status_check;
ALTER TABLE pending_actions ADD CONSTRAINT pending_actions_status_check CHECK (status IN
    ('pending', 'confirmed', 'executing', 'done', 'failed', 'declined', 'expired',
     'needs_attention'));
ALTER TABLE pending_actions ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE pending_actions ADD COLUMN next_try_at DOUBLE PRECISION;
ALTER TABLE pending_actions ADD COLUMN last_answer TEXT;
ALTER TABLE pending_actions ADD COLUMN language TEXT;
CREATE INDEX pending_actions_open ON pending_actions(status, updated_at);
