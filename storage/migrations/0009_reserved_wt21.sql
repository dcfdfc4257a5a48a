-- Placeholder of branch wt-21 (issue 21) so that its migration 0010 applies in order.
-- Another issue's migration takes this number: delete this file when they are merged.
SELECT 1;
