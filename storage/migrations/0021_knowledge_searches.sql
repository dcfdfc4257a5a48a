-- Each search of the shop's knowledge a customer's turn made (the search_knowledge
-- tool): /stats counts searches and misses, and the misses (found = 0) are the
-- questions the knowledge does not answer yet, for the owner's gaps report.
CREATE TABLE knowledge_searches (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          REAL NOT NULL,
    chat_id     INTEGER,
    turn_id     TEXT,
    query       TEXT NOT NULL,          -- the query as the model passed it (customer's words)
    found       INTEGER NOT NULL,       -- relevant passages returned; 0 is a miss
    best        TEXT                    -- the best passage's page URL or file name
);
CREATE INDEX knowledge_searches_at ON knowledge_searches(at);
