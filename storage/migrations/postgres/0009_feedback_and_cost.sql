-- PostgreSQL twin of ../0009_feedback_and_cost.sql: the same schema, with ids and counts BIGINT,
-- times DOUBLE PRECISION (PostgreSQL's REAL has 4 bytes), identity columns for rowids.
-- Issue 18: 👍/👎 feedback on AI answers, and cached input tokens for the cost estimate.
--
-- One row per rated answer (the turn that produced it): a press is recorded once per
-- answer and a later press replaces it (👍 then 👎 counts once, as 👎). `answered_at` is
-- the turn's start, copied in so /stats counts the ratings of a period's answers from this
-- table's own index. Only ids and the rating: nothing the customer wrote.
CREATE TABLE answer_feedback (
    turn_id     TEXT PRIMARY KEY REFERENCES turns(id),
    chat_id     BIGINT NOT NULL,
    user_id     BIGINT NOT NULL,         -- who pressed last (Telegram's id of the press)
    rating      BIGINT NOT NULL CHECK (rating IN (1, -1)),   -- 1 = 👍, -1 = 👎
    answered_at DOUBLE PRECISION NOT NULL,  -- turns.started_at of the rated answer
    rated_at    DOUBLE PRECISION NOT NULL
);
CREATE INDEX answer_feedback_stats ON answer_feedback(answered_at, rating);

-- Input tokens the provider served from its prompt cache (usage.prompt_tokens_details.
-- cached_tokens); NULL when it did not say. They are part of prompt_tokens.
ALTER TABLE llm_calls ADD COLUMN cached_tokens BIGINT;
ALTER TABLE turns ADD COLUMN cached_tokens BIGINT;

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

-- Turn totals per UTC day, so /stats over a long period sums a few hundred rows instead
-- of scanning a million turns. Kept by storage/records.py in the SAME transaction that
-- inserts the turn (turns are never updated or deleted), so a crash leaves both or
-- neither; a period's ragged first and last day are read from `turns` itself.
CREATE TABLE turn_totals_daily (
    day               DOUBLE PRECISION PRIMARY KEY,  -- UTC midnight, unix seconds (n * 86400)
    turns             BIGINT NOT NULL,
    model_steps       BIGINT NOT NULL,
    max_model_steps   BIGINT NOT NULL,
    tool_calls        BIGINT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,   -- sums over turns whose usage is known
    completion_tokens BIGINT NOT NULL,
    cached_tokens     BIGINT NOT NULL,
    usage_unknown     BIGINT NOT NULL    -- turns whose prompt or completion count is NULL
);
INSERT INTO turn_totals_daily
SELECT floor(started_at / 86400) * 86400.0,  -- floor, not CAST: PostgreSQL's CAST rounds
       COUNT(*), SUM(model_steps), MAX(model_steps), SUM(tool_calls),
       COALESCE(SUM(prompt_tokens) FILTER (WHERE completion_tokens IS NOT NULL), 0),
       COALESCE(SUM(completion_tokens) FILTER (WHERE prompt_tokens IS NOT NULL), 0),
       COALESCE(SUM(cached_tokens)
         FILTER (WHERE prompt_tokens IS NOT NULL AND completion_tokens IS NOT NULL), 0),
       COUNT(*) FILTER (WHERE prompt_tokens IS NULL OR completion_tokens IS NULL)
FROM turns GROUP BY 1;
