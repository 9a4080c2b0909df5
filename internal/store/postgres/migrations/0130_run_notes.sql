-- A step of a run that targeted no host has no per-host result; its note
-- says why (SPEC §6: "on: [db] matched no member of this incarnation",
-- "where: was false on every host"). One note per task (seq) of a run.
CREATE TABLE run_notes (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    path        TEXT NOT NULL DEFAULT '',
    task_name   TEXT NOT NULL DEFAULT '',
    note        TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
