package checker

import "context"

type onBehalfKey struct{}

// withOnBehalfOf returns ctx carrying the Archon a task acts for.
func withOnBehalfOf(ctx context.Context, archonID string) context.Context {
	if archonID == "" {
		return ctx
	}
	return context.WithValue(ctx, onBehalfKey{}, archonID)
}

// OnBehalfOf returns the Archon the task running under ctx acts for — the
// owner of the schedule that started it, or the Archon who executed the
// procedure — or "" (a task nobody is recorded for). The Commander
// passes it on to the Keeper's API, which authorizes and audits the
// task's calls under that Archon (SPEC §10.2, audit M4).
func OnBehalfOf(ctx context.Context) string {
	id, _ := ctx.Value(onBehalfKey{}).(string)
	return id
}
