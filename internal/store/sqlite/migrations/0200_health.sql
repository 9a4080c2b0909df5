-- Health checks (SPEC §14.1): the current state per (incarnation, check,
-- host), a bounded history of transitions, and souls' vital signs.
CREATE TABLE health_states (
    incarnation TEXT NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    check_name  TEXT NOT NULL,
    sid         TEXT NOT NULL,
    status      TEXT NOT NULL,
    message     TEXT NOT NULL DEFAULT '',
    perfdata    TEXT NOT NULL DEFAULT '',
    since       TEXT NOT NULL,
    checked_at  TEXT NOT NULL,
    reported_at TEXT NOT NULL,
    flaps       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (incarnation, check_name, sid)
);

CREATE TABLE health_transitions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    incarnation TEXT NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    check_name  TEXT NOT NULL,
    sid         TEXT NOT NULL,
    from_status TEXT NOT NULL,
    to_status   TEXT NOT NULL,
    message     TEXT NOT NULL DEFAULT '',
    at          TEXT NOT NULL
);
CREATE INDEX health_transitions_inc ON health_transitions (incarnation, id);

CREATE TABLE soul_vitals (
    sid    TEXT PRIMARY KEY,
    vitals TEXT NOT NULL,
    at     TEXT NOT NULL
);
