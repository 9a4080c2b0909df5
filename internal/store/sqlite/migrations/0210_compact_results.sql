-- Compact per-host results (issue 23, growth): a run's results were keyed
-- and stored by its UUID and each host's SID as text, with two text
-- timestamps, in a rowid table plus its primary-key index — about 320
-- bytes per unchanged host result. Now:
--   * runs get a small integer number (runs.num, assigned on insert by the
--     trigger below) and hosts one too (result_hosts, never deleted, so a
--     number once read stays valid);
--   * run_results is keyed by (run, seq, host) numbers WITHOUT ROWID: the
--     table is its own primary-key index, rows of one run are contiguous
--     and appended in order;
--   * times are integers: the start in microseconds since the epoch and
--     the time to the end in microseconds.
-- The Go side (sqlstore/results.go) still reads and writes HostResult with
-- run IDs, SIDs and times.

CREATE TABLE result_hosts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    sid         TEXT NOT NULL UNIQUE
);

ALTER TABLE runs ADD COLUMN num INTEGER;
UPDATE runs SET num = rowid;
CREATE UNIQUE INDEX runs_num ON runs (num);
CREATE TRIGGER runs_number AFTER INSERT ON runs WHEN NEW.num IS NULL
BEGIN
    UPDATE runs SET num = (SELECT COALESCE(MAX(num), 0) + 1 FROM runs) WHERE rowid = NEW.rowid;
END;

INSERT INTO result_hosts (sid) SELECT DISTINCT sid FROM run_results ORDER BY sid;

CREATE TABLE run_results_compact (
    run         INTEGER NOT NULL REFERENCES runs (num) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    host        INTEGER NOT NULL,
    path        TEXT NOT NULL DEFAULT '',
    task_name   TEXT NOT NULL DEFAULT '',
    wave        INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL,
    changed     INTEGER NOT NULL DEFAULT 0,
    rc          INTEGER NOT NULL DEFAULT 0,
    stdout      TEXT NOT NULL DEFAULT '',
    stderr      TEXT NOT NULL DEFAULT '',
    msg         TEXT NOT NULL DEFAULT '',
    diff        TEXT NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    data        TEXT,
    started_us  INTEGER NOT NULL,
    elapsed_us  INTEGER NOT NULL DEFAULT 0,
    final       INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (run, seq, host)
) WITHOUT ROWID;

INSERT INTO run_results_compact (run, seq, host, path, task_name, wave, status, changed, rc, stdout, stderr, msg, diff,
    duration_ms, data, started_us, elapsed_us, final)
SELECT r.num, rr.seq, h.id, rr.path, rr.task_name, rr.wave, rr.status, rr.changed, rr.rc, rr.stdout, rr.stderr, rr.msg, rr.diff,
    rr.duration_ms, rr.data,
    CAST(strftime('%s', rr.started_at) AS INTEGER) * 1000000 + CAST(substr(rr.started_at, 21, 6) AS INTEGER),
    (CAST(strftime('%s', rr.finished_at) AS INTEGER) * 1000000 + CAST(substr(rr.finished_at, 21, 6) AS INTEGER))
      - (CAST(strftime('%s', rr.started_at) AS INTEGER) * 1000000 + CAST(substr(rr.started_at, 21, 6) AS INTEGER)),
    rr.final
FROM run_results rr JOIN runs r ON r.id = rr.run_id JOIN result_hosts h ON h.sid = rr.sid;

DROP TABLE run_results;
ALTER TABLE run_results_compact RENAME TO run_results;
