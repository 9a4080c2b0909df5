-- Issue 36. Retention of run records (runs.keep.records): a run a kept
-- history entry names is kept, looked up by run id. Run lists are in the
-- order runs were recorded (runs.num), not by their wall-clock time, which
-- a clock step can put out of order.
CREATE INDEX history_run ON history (run_id);
CREATE INDEX runs_incarnation_num ON runs (incarnation, num);
