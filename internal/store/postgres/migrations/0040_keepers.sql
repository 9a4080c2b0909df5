-- Every keeper on the database has a row (SPEC §10.4): its identity, the
-- address other keepers reach its API at, its own Checker token, and a
-- heartbeat. The leader cleans up after a keeper whose heartbeat stopped
-- and whose relay lock is gone (it died), then deletes its row.
CREATE TABLE keepers (
    id               TEXT COLLATE "C" PRIMARY KEY,
    address          TEXT COLLATE "C" NOT NULL DEFAULT '',
    version          TEXT COLLATE "C" NOT NULL DEFAULT '',
    checker_token_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    started_at       TIMESTAMPTZ NOT NULL,
    heartbeat_at     TIMESTAMPTZ NOT NULL
);
