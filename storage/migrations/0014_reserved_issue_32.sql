-- Placeholder for issue 32's migration 0014 (confirmation actions), which is built on
-- another branch: it keeps the numbering gap-free until that branch is merged. When
-- merging, keep issue 32's 0014 and delete this file (a database that applied this
-- no-op then applies nothing under 0014: re-create development databases).
CREATE TABLE reserved_0014 (id TEXT);
DROP TABLE reserved_0014;
