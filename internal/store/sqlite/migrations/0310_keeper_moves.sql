-- A keeper of a fleet asked to move souls to other keepers (SPEC §17,
-- keeper fleet): all of them for a drain (`keeper drain`, `soulctl keepers
-- drain`), or some for a rebalance. The keeper takes its row when it sees it.
CREATE TABLE keeper_moves (
    keeper_id    TEXT PRIMARY KEY,
    drain        INTEGER NOT NULL DEFAULT 0,
    souls        INTEGER NOT NULL DEFAULT 0,
    by_id        TEXT NOT NULL DEFAULT '',
    requested_at TEXT NOT NULL
);
