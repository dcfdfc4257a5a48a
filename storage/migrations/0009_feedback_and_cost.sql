-- Issue 18: 👍/👎 feedback on AI answers, and cached input tokens for the cost estimate.
--
-- One row per rated answer (the turn that produced it): a press is recorded once per
-- answer and a later press replaces it (👍 then 👎 counts once, as 👎). `answered_at` is
-- the turn's start, copied in so /stats counts the ratings of a period's answers from this
-- table's own index. Only ids and the rating: nothing the customer wrote.
CREATE TABLE answer_feedback (
    turn_id     TEXT PRIMARY KEY REFERENCES turns(id),
    chat_id     INTEGER NOT NULL,
    user_id     INTEGER NOT NULL,        -- who pressed last (Telegram's id of the press)
    rating      INTEGER NOT NULL CHECK (rating IN (1, -1)),  -- 1 = 👍, -1 = 👎
    answered_at REAL NOT NULL,           -- turns.started_at of the rated answer
    rated_at    REAL NOT NULL
);
CREATE INDEX answer_feedback_stats ON answer_feedback(answered_at, rating);

-- Input tokens the provider served from its prompt cache (usage.prompt_tokens_details.
-- cached_tokens); NULL when it did not say. They are part of prompt_tokens.
ALTER TABLE llm_calls ADD COLUMN cached_tokens INTEGER;
ALTER TABLE turns ADD COLUMN cached_tokens INTEGER;

-- /stats reads the turn totals from one covering index; it now covers cached tokens too.
DROP INDEX turns_stats_totals;
CREATE INDEX turns_stats_totals
    ON turns(started_at, model_steps, tool_calls, prompt_tokens, completion_tokens,
             cached_tokens);
-- summaries' tokens for the cost estimate, from the summary-only partial index
DROP INDEX llm_calls_stats_summary;
CREATE INDEX llm_calls_stats_summary
    ON llm_calls(started_at, status, prompt_tokens, completion_tokens, cached_tokens)
    WHERE purpose = 'summary';
