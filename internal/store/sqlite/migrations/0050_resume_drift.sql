-- Resume (SPEC §8.8): a run remembers the commit and the members it ran
-- with, and the run it resumes. Drift (SPEC §8.9): drift runs are marked,
-- and each incarnation keeps its drift schedule and last drift report.
ALTER TABLE runs ADD COLUMN resumed_from TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN service_commit TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN members TEXT;
ALTER TABLE runs ADD COLUMN drift INTEGER NOT NULL DEFAULT 0;

CREATE TABLE drift (
    incarnation TEXT PRIMARY KEY REFERENCES incarnations (name) ON DELETE CASCADE,
    scenario    TEXT NOT NULL DEFAULT '',
    every_ms    INTEGER NOT NULL DEFAULT 0,
    report      TEXT,
    updated_at  TEXT NOT NULL
);
