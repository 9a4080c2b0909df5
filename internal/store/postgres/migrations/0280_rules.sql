-- Rules (SPEC §17): Keeper-wide rules, kill switches, every decision a
-- rule took, notification endpoints and their deliveries (dead letters).
CREATE TABLE keeper_rules (
    name       TEXT PRIMARY KEY,
    source     TEXT NOT NULL,
    owner      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE rule_pauses (
    rule   TEXT PRIMARY KEY,
    by_id  TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    at     TIMESTAMPTZ NOT NULL
);

CREATE TABLE rule_firings (
    id          BIGSERIAL PRIMARY KEY,
    rule        TEXT NOT NULL,
    incarnation TEXT NOT NULL DEFAULT '',
    event_kind  TEXT NOT NULL,
    event       TEXT NOT NULL,
    incident    TEXT NOT NULL DEFAULT '',
    decision    TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL DEFAULT '',
    run_id      TEXT NOT NULL DEFAULT '',
    task_ids    TEXT NOT NULL DEFAULT '[]',
    error       TEXT NOT NULL DEFAULT '',
    owner       TEXT NOT NULL DEFAULT '',
    at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX rule_firings_rule ON rule_firings (rule, id);
CREATE INDEX rule_firings_run ON rule_firings (run_id);

CREATE TABLE notify_endpoints (
    name       TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    url        TEXT NOT NULL DEFAULT '',
    config     TEXT NOT NULL DEFAULT '{}',
    sealed     BYTEA,
    owner      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE notify_deliveries (
    id         BIGSERIAL PRIMARY KEY,
    endpoint   TEXT NOT NULL,
    firing_id  BIGINT NOT NULL DEFAULT 0,
    payload    TEXT NOT NULL,
    status     TEXT NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    next_at    TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX notify_deliveries_due ON notify_deliveries (status, next_at);
