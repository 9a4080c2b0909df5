package engine

import (
	"fmt"
	"maps"
	"time"
	"unicode/utf8"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/store"
)

// row converts one host's final result of t into its stored form: secrets
// masked, and stdout, stderr, msg, diff and every string under data capped
// at OutputCap bytes (so a chatty command cannot fill the database; the
// row's data says which fields were truncated). Loop items, a block's or a
// destiny's task results and a destiny's output go into data.
func (r *runner) row(t *dsl.Task, sid string, wave int, res domain.Result, start, end time.Time) store.HostResult {
	return rowOf(r.run.ID, r.seq[t], t.Path, executor.TaskName(t), sid, wave, res, start, end, r.secretList(), r.e.cfg.OutputCap)
}

// rowOf is row for a task known by its seq, path and name (late results
// are recorded by the engine, possibly without the run's runner).
func rowOf(runID string, seq int, path, name, sid string, wave int, res domain.Result, start, end time.Time, secrets []string, limit int) store.HostResult {
	res = executor.Mask(res, secrets)
	c := capper{limit: limit}
	data := maps.Clone(res.Data)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range data {
		data[k] = c.value(v)
	}
	if res.Output != nil {
		data["output"] = c.value(map[string]any(res.Output))
	}
	if res.Results != nil {
		items := make([]any, len(res.Results))
		for i, x := range res.Results {
			items[i] = c.summary(fmt.Sprintf("item %d", i), x)
		}
		data["results"] = items
	}
	if res.Tasks != nil {
		tasks := make([]any, len(res.Tasks))
		for i, x := range res.Tasks {
			tasks[i] = c.summary(x.Name, x.Result)
		}
		data["tasks"] = tasks
	}
	hr := store.HostResult{
		RunID: runID, Seq: seq, Path: path, TaskName: name,
		SID: sid, Wave: wave, Status: string(res.Status()), Changed: res.Changed, RC: res.RC,
		Stdout: c.text("stdout", res.Stdout), Stderr: c.text("stderr", res.Stderr),
		Msg: c.text("msg", res.Msg), Diff: c.text("diff", res.Diff),
		DurationMS: res.DurationMS, StartedAt: start, FinishedAt: end,
		// The keeper's verdict on work whose soul never answered may be
		// replaced by the soul's late answer; anything else is final.
		Final: !res.Abandoned && !res.Unreachable,
	}
	if len(c.truncated) > 0 {
		data["truncated"] = c.truncated
	}
	if len(data) > 0 {
		hr.Data = data
	}
	return hr
}

// capper truncates text to a byte limit and remembers which top-level
// fields it truncated.
type capper struct {
	limit     int
	truncated []any
}

func (c *capper) text(field, s string) string {
	out, cut := capText(s, c.limit)
	if cut {
		c.truncated = append(c.truncated, field)
	}
	return out
}

// summary is the stored form of a nested result (a loop item, a task of a
// block or destiny).
func (c *capper) summary(name string, x domain.Result) map[string]any {
	m := map[string]any{
		"name": name, "status": string(x.Status()), "changed": x.Changed, "rc": x.RC,
		"msg": c.value(x.Msg), "stdout": c.value(x.Stdout), "stderr": c.value(x.Stderr),
		"duration_ms": x.DurationMS,
	}
	if x.Diff != "" {
		m["diff"] = c.value(x.Diff)
	}
	if x.Tasks != nil {
		ts := make([]any, len(x.Tasks))
		for i, y := range x.Tasks {
			ts[i] = c.summary(y.Name, y.Result)
		}
		m["tasks"] = ts
	}
	return m
}

// value caps every string inside v.
func (c *capper) value(v any) any {
	switch x := v.(type) {
	case string:
		out, cut := capText(x, c.limit)
		if cut && !contains(c.truncated, "data") {
			c.truncated = append(c.truncated, "data")
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = c.value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = c.value(e)
		}
		return out
	}
	return v
}

func contains(list []any, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// capText keeps the head and the tail of s (errors are usually at the end)
// within limit bytes, cut at rune boundaries, with a marker saying how much
// was dropped.
func capText(s string, limit int) (string, bool) {
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	marker := fmt.Sprintf("\n… [%d bytes truncated] …\n", len(s)-limit)
	head := limit / 2
	tail := limit - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	from := len(s) - tail
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return s[:head] + marker + s[from:], true
}
