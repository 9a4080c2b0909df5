-- Every keeper on the database has a row (SPEC §10.4): its identity, the
-- address other keepers reach its API at, its own Checker token, and a
-- heartbeat. A SQLite keeper runs alone; the table keeps one schema for
-- both backends.
CREATE TABLE keepers (
    id               TEXT PRIMARY KEY,
    address          TEXT NOT NULL DEFAULT '',
    version          TEXT NOT NULL DEFAULT '',
    checker_token_id TEXT NOT NULL DEFAULT '',
    started_at       TEXT NOT NULL,
    heartbeat_at     TEXT NOT NULL
);
