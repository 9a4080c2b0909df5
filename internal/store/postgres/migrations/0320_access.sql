-- Teams and scoped grants (issue 34, docs/access.md). An Archon's powers
-- are the grants it holds, directly or through its teams: a grant gives a
-- role (built-in or custom) on a scope (the keeper, a service, an
-- incarnation or a coven). Every Archon that existed before keeps exactly
-- its powers: its role becomes a grant of that role on the whole keeper.
CREATE TABLE teams (
    name        TEXT COLLATE "C" PRIMARY KEY,
    description TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE team_members (
    team      TEXT COLLATE "C" NOT NULL REFERENCES teams (name) ON DELETE CASCADE,
    archon_id TEXT COLLATE "C" NOT NULL REFERENCES archons (id),
    PRIMARY KEY (team, archon_id)
);
CREATE INDEX team_members_archon ON team_members (archon_id);

CREATE TABLE access_roles (
    name        TEXT COLLATE "C" PRIMARY KEY,
    permissions TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE grants (
    id           TEXT COLLATE "C" PRIMARY KEY,
    subject_kind TEXT NOT NULL,
    subject      TEXT COLLATE "C" NOT NULL,
    role         TEXT NOT NULL,
    scope_kind   TEXT NOT NULL,
    scope        TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_by   TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (subject_kind, subject, role, scope_kind, scope)
);
CREATE INDEX grants_subject ON grants (subject_kind, subject);

INSERT INTO grants (id, subject_kind, subject, role, scope_kind, scope, created_by, created_at)
    SELECT 'archon-role-' || id, 'archon', id, role, 'keeper', '', '', created_at FROM archons;

-- A secret belongs to a scope (the keeper: every scenario may read it; a
-- service or an incarnation: only that one's scenarios).
ALTER TABLE secrets ADD COLUMN scope_kind TEXT NOT NULL DEFAULT 'keeper';
ALTER TABLE secrets ADD COLUMN scope TEXT NOT NULL DEFAULT '';
