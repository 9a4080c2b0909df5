-- Retention (runs.keep, issue 23): a run whose per-host results were
-- pruned says when; the index serves the prune's per-incarnation order.
ALTER TABLE runs ADD COLUMN pruned_at TEXT;
CREATE INDEX pending_triggers_run ON pending_triggers (run_id);
