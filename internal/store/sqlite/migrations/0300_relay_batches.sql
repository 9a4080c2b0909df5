-- Relayed work travels as one batch per (dispatch, keeper) instead of one
-- row per soul (issue 30). A SQLite keeper runs alone and never relays;
-- the tables exist so both backends keep one schema and pass one
-- conformance suite.
DROP TABLE relays;

CREATE TABLE relay_batches (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    from_keeper TEXT NOT NULL,
    to_keeper   TEXT NOT NULL,
    run_id      TEXT NOT NULL DEFAULT '',
    task        TEXT NOT NULL DEFAULT '',
    souls       INTEGER NOT NULL,
    work        BLOB NOT NULL,
    status      TEXT NOT NULL,
    fallback    BLOB,
    deadline    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX relay_batches_to ON relay_batches (to_keeper, status);
CREATE INDEX relay_batches_from ON relay_batches (from_keeper, status);
CREATE INDEX relay_batches_deadline ON relay_batches (deadline);

CREATE TABLE relay_results (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    batch_id   INTEGER NOT NULL,
    souls      INTEGER NOT NULL,
    body       BLOB NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX relay_results_batch ON relay_results (batch_id, id);
