-- Relayed work travels as one batch per (dispatch, keeper) instead of one
-- row per soul (issue 30): relay_batches holds the work for all the souls
-- of one dispatch whose streams one keeper holds, relay_results the
-- results that keeper writes in batches as its souls answer. Only row ids
-- travel in NOTIFY.
--
-- UNLOGGED, as relays was: the rows live for one task's round trip and are
-- worthless after a server crash (the keepers waiting on them have lost
-- their connections too). Rows of the old per-soul table are in flight at
-- most for a task's timeout; keepers of one database upgrade together.
DROP TABLE relays;

CREATE UNLOGGED TABLE relay_batches (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_keeper TEXT COLLATE "C" NOT NULL,
    to_keeper   TEXT COLLATE "C" NOT NULL,
    run_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    task        TEXT COLLATE "C" NOT NULL DEFAULT '',
    souls       INTEGER NOT NULL,
    work        BYTEA NOT NULL,
    status      TEXT COLLATE "C" NOT NULL,
    fallback    BYTEA,
    deadline    TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ
);
CREATE INDEX relay_batches_to ON relay_batches (to_keeper, status);
CREATE INDEX relay_batches_from ON relay_batches (from_keeper, status);
CREATE INDEX relay_batches_deadline ON relay_batches (deadline);

CREATE UNLOGGED TABLE relay_results (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    batch_id   BIGINT NOT NULL,
    souls      INTEGER NOT NULL,
    body       BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX relay_results_batch ON relay_results (batch_id, id);
