-- The health after a run (SPEC §14.1, after_runs: true): the outcomes of
-- the after_runs checks per host, as JSON, kept with the run.
CREATE TABLE run_health (
    run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    health TEXT NOT NULL,
    at     TIMESTAMPTZ NOT NULL
);
