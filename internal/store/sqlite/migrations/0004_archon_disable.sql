-- An admin can disable an Archon: every token of a disabled Archon is
-- refused until it is enabled again. NULL: enabled.
ALTER TABLE archons ADD COLUMN disabled_at TEXT;
