-- The Keeper's secret store (SPEC §10.5): each value is sealed with
-- XChaCha20-Poly1305 under the key file beside the signing key before it
-- reaches the database; the store only ever sees the ciphertext.
CREATE TABLE secrets (
    name        TEXT COLLATE "C" PRIMARY KEY,
    ciphertext  BYTEA NOT NULL,
    owner       TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
