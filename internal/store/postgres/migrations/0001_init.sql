-- Soul Stack schema, PostgreSQL dialect. Keep in step with
-- internal/store/sqlite/migrations: same tables, columns and constraints;
-- only types differ (TIMESTAMPTZ, JSONB, BYTEA, BOOLEAN, identity columns;
-- text in the "C" collation so that ORDER BY sorts bytewise, as SQLite and Go do).

CREATE TABLE archons (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL UNIQUE,
    role        TEXT COLLATE "C" NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE tokens (
    id          TEXT COLLATE "C" PRIMARY KEY,
    archon_id   TEXT COLLATE "C" NOT NULL REFERENCES archons (id) ON DELETE CASCADE,
    description TEXT COLLATE "C" NOT NULL DEFAULT '',
    expires_at  TIMESTAMPTZ NOT NULL,
    revoked_at  TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX tokens_archon ON tokens (archon_id);

CREATE TABLE audit (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          TIMESTAMPTZ NOT NULL,
    archon_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    action      TEXT COLLATE "C" NOT NULL,
    target      TEXT COLLATE "C" NOT NULL DEFAULT '',
    summary     JSONB
);
CREATE INDEX audit_archon ON audit (archon_id, id);
CREATE INDEX audit_action ON audit (action, id);

CREATE TABLE settings (
    name        TEXT COLLATE "C" PRIMARY KEY,
    value       BYTEA NOT NULL
);

CREATE TABLE souls (
    sid         TEXT COLLATE "C" PRIMARY KEY,
    public_key  BYTEA,
    status      TEXT COLLATE "C" NOT NULL,
    covens      JSONB NOT NULL DEFAULT '[]',
    soulprint   JSONB NOT NULL DEFAULT '{}',
    version     TEXT COLLATE "C" NOT NULL DEFAULT '',
    keeper_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    last_seen   TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX souls_status ON souls (status);
CREATE INDEX souls_keeper ON souls (keeper_id);

-- soul_covens mirrors souls.covens for filtering by coven in SQL.
CREATE TABLE soul_covens (
    sid         TEXT COLLATE "C" NOT NULL REFERENCES souls (sid) ON DELETE CASCADE,
    coven       TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (sid, coven)
);
CREATE INDEX soul_covens_coven ON soul_covens (coven);

CREATE TABLE join_tokens (
    id          TEXT COLLATE "C" PRIMARY KEY,
    secret_hash BYTEA NOT NULL UNIQUE,
    covens      JSONB NOT NULL DEFAULT '[]',
    expires_at  TIMESTAMPTZ NOT NULL,
    created_by  TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    uses        BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE services (
    name        TEXT COLLATE "C" PRIMARY KEY,
    git         TEXT COLLATE "C" NOT NULL,
    ref         TEXT COLLATE "C" NOT NULL,
    commit_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    description TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE incarnations (
    name        TEXT COLLATE "C" PRIMARY KEY,
    service     TEXT COLLATE "C" NOT NULL REFERENCES services (name),
    ref         TEXT COLLATE "C" NOT NULL DEFAULT '',
    commit_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    covens      JSONB NOT NULL DEFAULT '[]',
    input       JSONB,
    essence     JSONB,
    status      TEXT COLLATE "C" NOT NULL,
    state       JSONB NOT NULL DEFAULT '{}',
    active_run  TEXT COLLATE "C",
    lock_reason TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX incarnations_service ON incarnations (service);

-- The membership relation: which souls an incarnation runs on. Written
-- explicitly (creation, members API, cloud hosts), never derived from covens.
CREATE TABLE incarnation_members (
    incarnation TEXT COLLATE "C" NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    sid         TEXT COLLATE "C" NOT NULL,
    added_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incarnation, sid)
);
CREATE INDEX incarnation_members_sid ON incarnation_members (sid);

CREATE TABLE runs (
    id          TEXT COLLATE "C" PRIMARY KEY,
    incarnation TEXT COLLATE "C" NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    scenario    TEXT COLLATE "C" NOT NULL,
    input       JSONB,
    check_mode  BOOLEAN NOT NULL DEFAULT FALSE,
    status      TEXT COLLATE "C" NOT NULL,
    error       TEXT COLLATE "C" NOT NULL DEFAULT '',
    archon_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    keeper_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    started_at  TIMESTAMPTZ,
    finished_at TIMESTAMPTZ
);
CREATE INDEX runs_incarnation ON runs (incarnation, created_at);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_unfinished ON runs (keeper_id) WHERE status IN ('pending', 'running');

CREATE TABLE run_results (
    run_id      TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    sid         TEXT COLLATE "C" NOT NULL,
    path        TEXT COLLATE "C" NOT NULL DEFAULT '',
    task_name   TEXT COLLATE "C" NOT NULL DEFAULT '',
    wave        INTEGER NOT NULL DEFAULT 0,
    status      TEXT COLLATE "C" NOT NULL,
    changed     BOOLEAN NOT NULL DEFAULT FALSE,
    rc          INTEGER NOT NULL DEFAULT 0,
    stdout      TEXT COLLATE "C" NOT NULL DEFAULT '',
    stderr      TEXT COLLATE "C" NOT NULL DEFAULT '',
    msg         TEXT COLLATE "C" NOT NULL DEFAULT '',
    diff        TEXT COLLATE "C" NOT NULL DEFAULT '',
    duration_ms BIGINT NOT NULL DEFAULT 0,
    data        JSONB,
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, seq, sid)
);

CREATE TABLE history (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    incarnation TEXT COLLATE "C" NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    run_id      TEXT COLLATE "C" NOT NULL,
    scenario    TEXT COLLATE "C" NOT NULL,
    state       JSONB NOT NULL DEFAULT '{}',
    summary     JSONB NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX history_incarnation ON history (incarnation, id);

CREATE TABLE pending_triggers (
    incarnation TEXT COLLATE "C" NOT NULL REFERENCES incarnations (name) ON DELETE CASCADE,
    scenario    TEXT COLLATE "C" NOT NULL,
    task        TEXT COLLATE "C" NOT NULL,
    sid         TEXT COLLATE "C" NOT NULL,
    run_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incarnation, scenario, task, sid)
);

CREATE TABLE procedures (
    name        TEXT COLLATE "C" PRIMARY KEY,
    source      TEXT COLLATE "C" NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE checker_tasks (
    id          TEXT COLLATE "C" PRIMARY KEY,
    procedure_name TEXT COLLATE "C" NOT NULL,
    vars        JSONB,
    status      TEXT COLLATE "C" NOT NULL,
    run_error   TEXT COLLATE "C" NOT NULL DEFAULT '',
    message     TEXT COLLATE "C" NOT NULL DEFAULT '',
    parent_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    schedule_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    keeper_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    started_at  TIMESTAMPTZ,
    finished_at TIMESTAMPTZ
);
CREATE INDEX checker_tasks_procedure ON checker_tasks (procedure_name, created_at);
CREATE INDEX checker_tasks_created ON checker_tasks (created_at);
CREATE INDEX checker_tasks_unfinished ON checker_tasks (keeper_id) WHERE status IN ('PENDING', 'RUNNING');

CREATE TABLE checker_task_log (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     TEXT COLLATE "C" NOT NULL REFERENCES checker_tasks (id) ON DELETE CASCADE,
    at          TIMESTAMPTZ NOT NULL,
    step        TEXT COLLATE "C" NOT NULL DEFAULT '',
    kind        TEXT COLLATE "C" NOT NULL DEFAULT '',
    message     TEXT COLLATE "C" NOT NULL DEFAULT '',
    data        JSONB
);
CREATE INDEX checker_task_log_task ON checker_task_log (task_id, id);

CREATE TABLE schedules (
    id          TEXT COLLATE "C" PRIMARY KEY,
    procedure_name TEXT COLLATE "C" NOT NULL REFERENCES procedures (name),
    vars        JSONB,
    cron        TEXT COLLATE "C" NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX schedules_procedure ON schedules (procedure_name);

-- One row per schedule tick that ran: the primary key is what makes a tick
-- run at most once across keepers and restarts.
CREATE TABLE schedule_ticks (
    schedule_id TEXT COLLATE "C" NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    tick        TIMESTAMPTZ NOT NULL,
    claimed_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (schedule_id, tick)
);

CREATE TABLE leases (
    name        TEXT COLLATE "C" PRIMARY KEY,
    holder      TEXT COLLATE "C" NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
