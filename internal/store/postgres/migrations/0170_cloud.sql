-- Cloud providers, profiles and the instances created per incarnation
-- (SPEC §10.6). An instance's name is unique per provider.
CREATE TABLE cloud_providers (
    name        TEXT COLLATE "C" PRIMARY KEY,
    kind        TEXT NOT NULL,
    config      JSONB NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE TABLE cloud_profiles (
    name        TEXT COLLATE "C" PRIMARY KEY,
    provider    TEXT NOT NULL,
    spec        JSONB NOT NULL DEFAULT '{}',
    covens      JSONB NOT NULL DEFAULT '[]',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE TABLE cloud_instances (
    provider     TEXT COLLATE "C" NOT NULL,
    name         TEXT COLLATE "C" NOT NULL,
    incarnation  TEXT COLLATE "C" NOT NULL,
    profile      TEXT NOT NULL DEFAULT '',
    instance_id  TEXT NOT NULL DEFAULT '',
    address      TEXT NOT NULL DEFAULT '',
    sid          TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (provider, name)
);
CREATE INDEX cloud_instances_incarnation ON cloud_instances (incarnation);
