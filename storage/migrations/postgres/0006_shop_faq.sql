-- PostgreSQL twin of ../0006_shop_faq.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes), identity columns for rowids.
-- The shop's FAQ read by get_shop_info: one row per topic, plus the aliases customers use
-- for it. Keys are normalised by tools/shop/faq.py:faq_key (casefolded words, single spaces).
CREATE TABLE faq_entries (
    key      TEXT PRIMARY KEY,           -- faq_key(topic)
    topic    TEXT NOT NULL,              -- as the shop wrote it
    answer   TEXT NOT NULL,
    position BIGINT NOT NULL             -- order in the imported list (known topics are listed so)
);

CREATE TABLE faq_aliases (
    alias TEXT PRIMARY KEY,              -- faq_key(alias); never equal to another entry's key
    key   TEXT NOT NULL REFERENCES faq_entries(key) ON DELETE CASCADE
);
CREATE INDEX faq_aliases_entry ON faq_aliases(key);
