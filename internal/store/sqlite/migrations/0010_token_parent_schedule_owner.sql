-- A token minted by another token records its parent: revoking a token
-- revokes every token minted from it (SPEC §10.2 hardening, audit L8).
ALTER TABLE tokens ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
CREATE INDEX tokens_parent ON tokens (parent_id);
-- A schedule belongs to the Archon who made it; a disabled or deleted
-- owner's schedules are paused (audit M4). '' for schedules made before
-- owners existed: they run as before until an Archon re-creates them.
ALTER TABLE schedules ADD COLUMN owner_id TEXT NOT NULL DEFAULT '';
