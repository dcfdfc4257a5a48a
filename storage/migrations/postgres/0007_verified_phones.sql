-- PostgreSQL twin of ../0007_verified_phones.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes), identity columns for rowids.
-- Phone-verified ownership (issue 15). An order may name its owner by phone
-- (`owner_phone`, E.164 as written by tools/shop/rules.py), and a customer proves that a
-- phone is theirs by sharing their own Telegram contact: the verified number is kept per
-- Telegram user, replaced by a new share and deleted by /forget_phone. Nothing else about
-- the contact (names, vCard) is stored.
ALTER TABLE orders ADD COLUMN owner_phone TEXT;
CREATE INDEX orders_owner_phone ON orders(owner_phone);

CREATE TABLE verified_phones (
    user_id     BIGINT PRIMARY KEY,      -- the Telegram user who shared their own contact
    phone       TEXT NOT NULL,           -- E.164, e.g. +79123456789
    verified_at DOUBLE PRECISION NOT NULL  -- unix seconds of the latest share
);
