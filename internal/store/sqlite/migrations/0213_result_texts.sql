-- Compact results, second step (issue 23): an unchanged task reports the
-- same msg and data on a host run after run ("/srv/site/index.html is in
-- the wanted state", {path, size, sha256, mode}) — 150 bytes and more per
-- host result. A result's msg and data are now stored once per distinct
-- value in result_texts (keyed by the SHA-256 of their JSON) and the
-- result refers to it by number (run_results.detail). Older rows keep
-- their inline msg and data (detail NULL). The retention prune deletes the
-- texts no result refers to any more; the foreign key keeps a text a
-- result still refers to.
CREATE TABLE result_texts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    hash        BLOB NOT NULL UNIQUE,
    body        TEXT NOT NULL
);
ALTER TABLE run_results ADD COLUMN detail INTEGER REFERENCES result_texts (id) ON DELETE RESTRICT;
CREATE INDEX run_results_detail ON run_results (detail) WHERE detail IS NOT NULL;
