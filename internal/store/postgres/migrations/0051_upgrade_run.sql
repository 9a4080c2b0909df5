-- Upgrade with a migration scenario (issue 17): the run carries the ref it
-- upgrades the incarnation to; its commit switches the incarnation to the
-- run's commit in the same transaction. '' for every other run.
ALTER TABLE runs ADD COLUMN upgrade_ref TEXT NOT NULL DEFAULT '';
