-- What an imported order holds besides its status, as the live backends show it: the
-- items (JSON: [{"name": "...", "quantity": 1}, ...]), the total (amount as decimal
-- text, so no binary rounding; currency code), and the carrier's tracking. NULL: the
-- shop did not say.
ALTER TABLE orders ADD COLUMN items TEXT;
ALTER TABLE orders ADD COLUMN total_amount TEXT;
ALTER TABLE orders ADD COLUMN total_currency TEXT;
ALTER TABLE orders ADD COLUMN carrier TEXT;
ALTER TABLE orders ADD COLUMN tracking_number TEXT;
ALTER TABLE orders ADD COLUMN tracking_url TEXT;
