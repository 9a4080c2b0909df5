-- History entries summarize in counts (issue 23); see the SQLite migration
-- of the same number. Old per-host summaries are converted here.
UPDATE history SET summary = (
    SELECT jsonb_build_object(
        'hosts', COUNT(*),
        'hosts_changed', COUNT(*) FILTER (WHERE COALESCE((e.value->>'changed')::numeric, 0) > 0),
        'hosts_failed', COUNT(*) FILTER (WHERE COALESCE((e.value->>'failed')::numeric, 0) > 0),
        'ok', COALESCE(SUM((e.value->>'ok')::numeric), 0),
        'changed', COALESCE(SUM((e.value->>'changed')::numeric), 0),
        'failed', COALESCE(SUM((e.value->>'failed')::numeric), 0),
        'skipped', COALESCE(SUM((e.value->>'skipped')::numeric), 0))
    FROM jsonb_each(history.summary) e WHERE jsonb_typeof(e.value) = 'object')
WHERE jsonb_typeof(summary->'hosts') IS DISTINCT FROM 'number';
