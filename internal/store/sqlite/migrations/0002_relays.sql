-- Work relayed between keepers sharing a database (SPEC §10.4). A SQLite
-- keeper runs alone and never relays; the table exists so both backends
-- keep one schema and pass one conformance suite.
CREATE TABLE relays (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    from_keeper TEXT NOT NULL,
    to_keeper   TEXT NOT NULL,
    sid         TEXT NOT NULL,
    run_id      TEXT NOT NULL DEFAULT '',
    task_id     TEXT NOT NULL DEFAULT '',
    work        BLOB NOT NULL,
    status      TEXT NOT NULL,
    result      BLOB,
    deadline    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX relays_to ON relays (to_keeper, status);
CREATE INDEX relays_from ON relays (from_keeper, status);
CREATE INDEX relays_deadline ON relays (deadline);
