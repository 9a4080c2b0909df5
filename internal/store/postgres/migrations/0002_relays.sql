-- Work relayed between keepers sharing the database (SPEC §10.4): a row per
-- request for a soul whose stream another keeper holds. Only the row id
-- travels in NOTIFY (payloads are limited to 8000 bytes); work and result
-- stay here.
--
-- UNLOGGED: the rows live for one task's round trip and are worthless after
-- a server crash (the keepers waiting on them have lost their connections
-- too), so they skip the WAL and each relay write costs no WAL flush. A
-- crash or a failover empties the table; waits on the lost rows end by
-- their deadline.
CREATE UNLOGGED TABLE relays (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_keeper TEXT COLLATE "C" NOT NULL,
    to_keeper   TEXT COLLATE "C" NOT NULL,
    sid         TEXT COLLATE "C" NOT NULL,
    run_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    task_id     TEXT COLLATE "C" NOT NULL DEFAULT '',
    work        BYTEA NOT NULL,
    status      TEXT COLLATE "C" NOT NULL,
    result      BYTEA,
    deadline    TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ
);
CREATE INDEX relays_to ON relays (to_keeper, status);
CREATE INDEX relays_from ON relays (from_keeper, status);
CREATE INDEX relays_deadline ON relays (deadline);
