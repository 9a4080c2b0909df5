-- History entries summarize in counts (issue 23): a snapshot's summary was
-- one entry per host (53 KB at 1,000 hosts, on every history entry); it is
-- now {"hosts", "hosts_changed", "hosts_failed", "ok", "changed", "failed",
-- "skipped"}, and the per-host detail is the run's (GET /v1/runs/{id}).
-- Old summaries are converted here.
UPDATE history SET summary = (
    SELECT json_object(
        'hosts', COUNT(*),
        'hosts_changed', COALESCE(SUM(COALESCE(json_extract(value, '$.changed'), 0) > 0), 0),
        'hosts_failed', COALESCE(SUM(COALESCE(json_extract(value, '$.failed'), 0) > 0), 0),
        'ok', COALESCE(SUM(json_extract(value, '$.ok')), 0),
        'changed', COALESCE(SUM(json_extract(value, '$.changed')), 0),
        'failed', COALESCE(SUM(json_extract(value, '$.failed')), 0),
        'skipped', COALESCE(SUM(json_extract(value, '$.skipped')), 0))
    FROM json_each(history.summary) WHERE json_each.type = 'object')
WHERE json_type(summary, '$.hosts') IS NOT 'integer';
