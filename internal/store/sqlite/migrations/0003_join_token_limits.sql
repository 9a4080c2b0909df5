-- Join tokens can be limited to a number of uses (max_uses, 0 = no limit)
-- and revoked before they expire; both are checked by the one conditional
-- UPDATE that counts a use, so concurrent uses never exceed the limit.
ALTER TABLE join_tokens ADD COLUMN max_uses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE join_tokens ADD COLUMN revoked_at TEXT;
