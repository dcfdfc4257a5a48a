-- The shop's knowledge (tools/knowledge): sources the owner added (a site, a page, a
-- file, the imported FAQ, entries added one at a time), the documents fetched from each
-- (a page, a file) with what tells a re-sync that nothing changed, and their passages:
-- a heading path and a few hundred words each, the words' Snowball stems (the lexical
-- index, knowledge_fts) and a vector (float32 bytes) by the embedder `knowledge_index`
-- names. One transaction per source: a failed sync leaves the source as it was.
CREATE TABLE knowledge_sources (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,             -- site | page | file | faq | entries
    location   TEXT NOT NULL,             -- the URL or file path as added; 'faq', 'entries'
    title      TEXT NOT NULL,
    added_at   REAL NOT NULL,
    synced_at  REAL,
    error      TEXT,                      -- the last sync's one line, NULL when it worked
    demo       INTEGER NOT NULL DEFAULT 0 -- the demo shop's, removed with it
);

CREATE UNIQUE INDEX knowledge_sources_location ON knowledge_sources(location);

CREATE TABLE knowledge_documents (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id     INTEGER NOT NULL REFERENCES knowledge_sources(id) ON DELETE CASCADE,
    location      TEXT NOT NULL,          -- the page's URL or the file's name
    title         TEXT NOT NULL,
    etag          TEXT,
    last_modified TEXT,
    content_hash  TEXT NOT NULL,          -- sha256 of what was fetched
    fetched_at    REAL NOT NULL
);
CREATE UNIQUE INDEX knowledge_documents_location ON knowledge_documents(source_id, location);

CREATE TABLE knowledge_passages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES knowledge_documents(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,         -- order in its document
    heading     TEXT NOT NULL,            -- the heading path, "Delivery › Pickup"
    text        TEXT NOT NULL,
    stems       TEXT NOT NULL,            -- tools/knowledge/text.py:stems of heading and text
    priority    INTEGER NOT NULL DEFAULT 0, -- 1: the shop's own exact answers (FAQ, entries)
    embedding   BLOB                      -- float32, NULL until embedded
);
CREATE INDEX knowledge_passages_document ON knowledge_passages(document_id);

-- The lexical index over the stems (BM25), kept in step by triggers.
CREATE VIRTUAL TABLE knowledge_fts USING fts5(
    stems, content='knowledge_passages', content_rowid='id', tokenize='unicode61'
);
CREATE TRIGGER knowledge_passages_indexed AFTER INSERT ON knowledge_passages BEGIN
    INSERT INTO knowledge_fts(rowid, stems) VALUES (new.id, new.stems);
END;
CREATE TRIGGER knowledge_passages_unindexed AFTER DELETE ON knowledge_passages BEGIN
    INSERT INTO knowledge_fts(knowledge_fts, rowid, stems) VALUES ('delete', old.id, old.stems);
END;

-- One row: the embedder whose vectors are stored, and a counter every change moves (a
-- searcher's cached vectors are reloaded when it moved, on any instance).
CREATE TABLE knowledge_index (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    embedder    TEXT NOT NULL,
    dimension   INTEGER NOT NULL,
    generation  INTEGER NOT NULL
);
INSERT INTO knowledge_index(id, embedder, dimension, generation) VALUES (1, 'none', 0, 0);
