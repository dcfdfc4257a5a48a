-- What became of each question (services/outcomes.py), written with the turn in its own
-- transaction: `outcome` facts | no_facts | dont_know | handoff | action | declined |
-- failed (NULL: a turn stored before this version), `fact_tools` the tools whose results
-- the answer stood on (comma-separated), `repeat_of` the earlier turn of the same chat
-- whose question this one asks again (within a day). A 👎, a later handoff or a repeat
-- is read at report time, so a turn row is never updated.
ALTER TABLE turns ADD COLUMN outcome TEXT;
ALTER TABLE turns ADD COLUMN fact_tools TEXT;
ALTER TABLE turns ADD COLUMN repeat_of TEXT;
CREATE INDEX turns_outcome ON turns(outcome, started_at);
CREATE INDEX turns_repeat_of ON turns(repeat_of) WHERE repeat_of IS NOT NULL;

-- Every time an admin read a customer's conversation in Telegram (/chat, /gaps): who,
-- whose, when and from where. Only ids and times.
CREATE TABLE conversation_views (
    id        INTEGER PRIMARY KEY,
    admin_id  INTEGER NOT NULL,
    chat_id   INTEGER NOT NULL,
    via       TEXT NOT NULL,          -- 'chat' | 'gaps' | 'page'
    viewed_at REAL NOT NULL
);
CREATE INDEX conversation_views_at ON conversation_views(viewed_at);

-- The weekly digest of gaps to the admins (off by default): one row per week it was sent,
-- claimed before sending, so several instances send it once.
CREATE TABLE gap_digests (
    week    TEXT PRIMARY KEY,         -- ISO year and week, e.g. 2026-W49
    sent_at REAL NOT NULL
);

-- "Answer this" under a gap: the admin pressed it and the next message they write to the
-- bot becomes the shop's answer to that question (one waiting answer per admin).
CREATE TABLE gap_answers (
    admin_id INTEGER PRIMARY KEY,
    turn_id  TEXT NOT NULL,           -- the gap's first question
    asked_at REAL NOT NULL
);

-- A question and answer the model drafted from what an operator told a customer, once per
-- closed handoff; nothing enters the knowledge until an admin presses ✅ (or edits it).
-- status: drafting (claimed) -> pending (sent to the admins) | none (nothing general to
-- learn) -> added | skipped, each move one conditional update.
CREATE TABLE answer_drafts (
    id         INTEGER PRIMARY KEY,
    handoff_id INTEGER NOT NULL,
    chat_id    INTEGER NOT NULL,
    question   TEXT,
    answer     TEXT,
    status     TEXT NOT NULL CHECK (status IN
                 ('drafting', 'pending', 'none', 'added', 'skipped')),
    created_at REAL NOT NULL,
    decided_by INTEGER,
    decided_at REAL
);
CREATE UNIQUE INDEX answer_drafts_handoff ON answer_drafts(handoff_id);
