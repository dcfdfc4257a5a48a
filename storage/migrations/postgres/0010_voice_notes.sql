-- PostgreSQL twin of ../0010_voice_notes.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes), identity columns for rowids.
-- Voice messages (issue 21). A customer's voice note (or round video note) becomes the
-- customer's message of a normal turn; its transcript is stored in history as text and
-- marked as transcribed, so anyone reading a conversation knows it was heard, not typed.
ALTER TABLE messages ADD COLUMN transcribed BIGINT NOT NULL DEFAULT 0
    CHECK (transcribed IN (0, 1));

-- One row per voice or video note the bot handled, keyed by the update that carried it:
-- what /stats counts, and the transcript between transcription and the stored reply, so
-- a restart after a crash in between does not transcribe the same note again. The
-- transcript is cleared once the reply is stored (it lives on in the history); the audio
-- itself is never stored.
CREATE TABLE voice_notes (
    update_id       BIGINT PRIMARY KEY,
    chat_id         BIGINT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('voice', 'video_note')),
    duration_s      BIGINT NOT NULL,        -- the note's length as Telegram states it
    received_at     DOUBLE PRECISION NOT NULL,  -- unix seconds
    status          TEXT NOT NULL CHECK (status IN
                      ('received', 'transcribed', 'failed', 'too_long', 'off')),
    error_code      TEXT,                   -- why it failed (download, transcription, empty)
    transcription_s DOUBLE PRECISION,       -- time spent transcribing (the request)
    transcript      TEXT                    -- only until the reply is stored
);
CREATE INDEX voice_notes_received_at ON voice_notes(received_at, status);
