-- Web UI sessions (issue 31): the UI's cookie is an opaque random id, not
-- the Archon's token; only its SHA-256 is stored. A session names the
-- token it was opened with (its role, expiry and revocation still count)
-- and ends at logout (revoked_at), at expires_at, or when idle too long
-- (last_seen_at).
CREATE TABLE ui_sessions (
    id_hash      BLOB PRIMARY KEY,
    archon_id    TEXT NOT NULL REFERENCES archons (id) ON DELETE CASCADE,
    token_id     TEXT NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    revoked_at   TEXT
);
CREATE INDEX ui_sessions_expires ON ui_sessions (expires_at);
CREATE INDEX ui_sessions_token ON ui_sessions (token_id);
