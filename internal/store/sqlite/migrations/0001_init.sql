-- Soul Stack schema, SQLite dialect. Keep in step with
-- internal/store/postgres/migrations: same tables, columns and constraints;
-- only types differ (TEXT timestamps in sqlstore.TextTimeLayout, TEXT JSON,
-- INTEGER booleans).

CREATE TABLE archons (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    role        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE tokens (
    id          TEXT PRIMARY KEY,
    archon_id   TEXT NOT NULL REFERENCES archons (id) ON DELETE CASCADE,
    description TEXT NOT NULL DEFAULT '',
    expires_at  TEXT NOT NULL,
    revoked_at  TEXT,
    created_at  TEXT NOT NULL
);
CREATE INDEX tokens_archon ON tokens (archon_id);

CREATE TABLE audit (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    archon_id   TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL,
    target      TEXT NOT NULL DEFAULT '',
    summary     TEXT
);
CREATE INDEX audit_archon ON audit (archon_id, id);
CREATE INDEX audit_action ON audit (action, id);

CREATE TABLE settings (
    name        TEXT PRIMARY KEY,
    value       BLOB NOT NULL
);

CREATE TABLE souls (
    sid         TEXT PRIMARY KEY,
    public_key  BLOB,
    status      TEXT NOT NULL,
    covens      TEXT NOT NULL DEFAULT '[]',
    soulprint   TEXT NOT NULL DEFAULT '{}',
    version     TEXT NOT NULL DEFAULT '',
    keeper_id   TEXT NOT NULL DEFAULT '',
    last_seen   TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX souls_status ON souls (status);
CREATE INDEX souls_keeper ON souls (keeper_id);

-- soul_covens mirrors souls.covens for filtering by coven in SQL.
CREATE TABLE soul_covens (
    sid         TEXT NOT NULL REFERENCES souls (sid) ON DELETE CASCADE,
    coven       TEXT NOT NULL,
    PRIMARY KEY (sid, coven)
);
CREATE INDEX soul_covens_coven ON soul_covens (coven);

CREATE TABLE join_tokens (
    id          TEXT PRIMARY KEY,
    secret_hash BLOB NOT NULL UNIQUE,
    covens      TEXT NOT NULL DEFAULT '[]',
    expires_at  TEXT NOT NULL,
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    uses        INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE services (
    name        TEXT PRIMARY KEY,
    git         TEXT NOT NULL,
    ref         TEXT NOT NULL,
    commit_id   TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE incarnations (
    name        TEXT PRIMARY KEY,
    service     TEXT NOT NULL REFERENCES services (name),
    ref         TEXT NOT NULL DEFAULT '',
    commit_id   TEXT NOT NULL DEFAULT '',
    covens      TEXT NOT NULL DEFAULT '[]',
    input       TEXT,
    essence     TEXT,
    status      TEXT NOT NULL,
    state       TEXT NOT NULL DEFAULT '{}',
    active_run  TEXT,
    lock_reason TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX incarnations_service ON incarnations (service);

-- The membership relation: which souls an incarnation runs on. Written
-- explicitly (creation, members API, cloud hosts), never derived from covens.
CREATE TABLE incarnation_members (
    incarnation TEXT NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    sid         TEXT NOT NULL,
    added_at    TEXT NOT NULL,
    PRIMARY KEY (incarnation, sid)
);
CREATE INDEX incarnation_members_sid ON incarnation_members (sid);

CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    incarnation TEXT NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    scenario    TEXT NOT NULL,
    input       TEXT,
    check_mode  INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    archon_id   TEXT NOT NULL DEFAULT '',
    keeper_id   TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    started_at  TEXT,
    finished_at TEXT
);
CREATE INDEX runs_incarnation ON runs (incarnation, created_at);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_unfinished ON runs (keeper_id) WHERE status IN ('pending', 'running');

CREATE TABLE run_results (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    sid         TEXT NOT NULL,
    path        TEXT NOT NULL DEFAULT '',
    task_name   TEXT NOT NULL DEFAULT '',
    wave        INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL,
    changed     INTEGER NOT NULL DEFAULT 0,
    rc          INTEGER NOT NULL DEFAULT 0,
    stdout      TEXT NOT NULL DEFAULT '',
    stderr      TEXT NOT NULL DEFAULT '',
    msg         TEXT NOT NULL DEFAULT '',
    diff        TEXT NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    data        TEXT,
    started_at  TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    PRIMARY KEY (run_id, seq, sid)
);

CREATE TABLE history (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    incarnation TEXT NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    run_id      TEXT NOT NULL,
    scenario    TEXT NOT NULL,
    state       TEXT NOT NULL DEFAULT '{}',
    summary     TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL
);
CREATE INDEX history_incarnation ON history (incarnation, id);

CREATE TABLE pending_triggers (
    incarnation TEXT NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    scenario    TEXT NOT NULL,
    task        TEXT NOT NULL,
    sid         TEXT NOT NULL,
    run_id      TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    PRIMARY KEY (incarnation, scenario, task, sid)
);

CREATE TABLE procedures (
    name        TEXT PRIMARY KEY,
    source      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE checker_tasks (
    id          TEXT PRIMARY KEY,
    procedure_name TEXT NOT NULL,
    vars        TEXT,
    status      TEXT NOT NULL,
    run_error   TEXT NOT NULL DEFAULT '',
    message     TEXT NOT NULL DEFAULT '',
    parent_id   TEXT NOT NULL DEFAULT '',
    schedule_id TEXT NOT NULL DEFAULT '',
    keeper_id   TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    started_at  TEXT,
    finished_at TEXT
);
CREATE INDEX checker_tasks_procedure ON checker_tasks (procedure_name, created_at);
CREATE INDEX checker_tasks_created ON checker_tasks (created_at);
CREATE INDEX checker_tasks_unfinished ON checker_tasks (keeper_id) WHERE status IN ('PENDING', 'RUNNING');

CREATE TABLE checker_task_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     TEXT NOT NULL REFERENCES checker_tasks (id) ON DELETE CASCADE,
    at          TEXT NOT NULL,
    step        TEXT NOT NULL DEFAULT '',
    kind        TEXT NOT NULL DEFAULT '',
    message     TEXT NOT NULL DEFAULT '',
    data        TEXT
);
CREATE INDEX checker_task_log_task ON checker_task_log (task_id, id);

CREATE TABLE schedules (
    id          TEXT PRIMARY KEY,
    procedure_name TEXT NOT NULL REFERENCES procedures (name),
    vars        TEXT,
    cron        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX schedules_procedure ON schedules (procedure_name);

-- One row per schedule tick that ran: the primary key is what makes a tick
-- run at most once across keepers and restarts.
CREATE TABLE schedule_ticks (
    schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    tick        TEXT NOT NULL,
    claimed_at  TEXT NOT NULL,
    PRIMARY KEY (schedule_id, tick)
);

CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
