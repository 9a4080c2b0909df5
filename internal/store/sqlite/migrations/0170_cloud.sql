-- Cloud providers, profiles and the instances created per incarnation
-- (SPEC §10.6). An instance's name is unique per provider.
CREATE TABLE cloud_providers (
    name        TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    config      TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE cloud_profiles (
    name        TEXT PRIMARY KEY,
    provider    TEXT NOT NULL,
    spec        TEXT NOT NULL DEFAULT '{}',
    covens      TEXT NOT NULL DEFAULT '[]',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE cloud_instances (
    provider     TEXT NOT NULL,
    name         TEXT NOT NULL,
    incarnation  TEXT NOT NULL,
    profile      TEXT NOT NULL DEFAULT '',
    instance_id  TEXT NOT NULL DEFAULT '',
    address      TEXT NOT NULL DEFAULT '',
    sid          TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    PRIMARY KEY (provider, name)
);
CREATE INDEX cloud_instances_incarnation ON cloud_instances (incarnation);
