-- A result row is final unless it is the Keeper's verdict on work whose
-- soul never answered (unreachable, timed out, cancelled); only such a row
-- may be replaced by a late result, once (SPEC §10.3, audit finding L5).
-- Rows recorded before this migration count as final.
ALTER TABLE run_results ADD COLUMN final INTEGER NOT NULL DEFAULT 1;
