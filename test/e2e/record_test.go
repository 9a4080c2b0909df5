package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// incarnation is the name of the Redis incarnation the tests drive.
const incarnation = "redis-e2e"

// runTimeout bounds one scenario run; create installs packages.
const runTimeout = 3 * time.Minute

// startRun starts scenario on the incarnation ("create" creates it) and
// returns the run's apply_id.
func (c *cluster) startRun(t *testing.T, scenario string, input map[string]any) string {
	t.Helper()
	ctx := t.Context()
	var acc apitypes.Accepted
	var err error
	if scenario == "create" && !c.incarnationExists(t) {
		acc, err = c.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{
			Name: incarnation, Service: "redis", Covens: []string{coven}, Input: input})
	} else {
		acc, err = c.api.StartRun(ctx, incarnation, apitypes.StartRunRequest{Scenario: scenario, Input: input})
	}
	if err != nil {
		t.Fatalf("starting %s: %v", scenario, err)
	}
	if acc.ApplyID == "" {
		t.Fatalf("starting %s: no apply_id in the answer", scenario)
	}
	return acc.ApplyID
}

// incarnationExists reports whether the incarnation has been created.
func (c *cluster) incarnationExists(t *testing.T) bool {
	t.Helper()
	ctx := t.Context()
	_, err := c.api.GetIncarnation(ctx, incarnation)
	if apiclient.IsCode(err, domain.CodeNotFound) {
		return false
	}
	if err != nil {
		t.Fatalf("reading incarnation %s: %v", incarnation, err)
	}
	return true
}

// run starts scenario, waits until it ends and logs how long it took.
func (c *cluster) run(t *testing.T, scenario string, input map[string]any) apitypes.RunDetail {
	t.Helper()
	start := time.Now()
	id := c.startRun(t, scenario, input)
	r := c.waitRun(t, id)
	logRun(t, r, since(start))
	return r
}

// logRun logs a finished run: its outcome, how long it ran by its record,
// and the wall time from the request to the end.
func logRun(t *testing.T, r apitypes.RunDetail, wall time.Duration) {
	t.Helper()
	took := "?"
	if r.StartedAt != nil && r.FinishedAt != nil {
		took = r.FinishedAt.Sub(*r.StartedAt).Round(time.Millisecond).String()
	}
	t.Logf("run %s of %s: %s in %s (request to end %v)", r.ID, r.Scenario, r.Status, took, wall)
}

// waitRun polls the run until it has ended.
func (c *cluster) waitRun(t *testing.T, id string) apitypes.RunDetail {
	t.Helper()
	ctx := t.Context()
	var r apitypes.RunDetail
	eventually(t, runTimeout, "run "+id+" to end", func() error {
		var err error
		if r, err = c.api.GetRun(ctx, id); err != nil {
			return err
		}
		if !terminal(r.Status) {
			return fmt.Errorf("run is %s", r.Status)
		}
		return nil
	})
	return r
}

// watchRun polls the run until cond holds on its record, and returns that
// record; it fails the test if the run ends first.
func (c *cluster) watchRun(t *testing.T, id, what string, cond func(apitypes.RunDetail) bool) apitypes.RunDetail {
	t.Helper()
	ctx := t.Context()
	var r apitypes.RunDetail
	eventually(t, runTimeout, what, func() error {
		var err error
		if r, err = c.api.GetRun(ctx, id); err != nil {
			return err
		}
		if cond(r) {
			return nil
		}
		if terminal(r.Status) {
			return fmt.Errorf("run ended %s (%s) first", r.Status, r.Error)
		}
		return fmt.Errorf("not yet (run %s)", r.Status)
	})
	if terminal(r.Status) && !cond(r) {
		t.Fatalf("run %s ended %s before %s", id, r.Status, what)
	}
	return r
}

func terminal(status string) bool {
	switch status {
	case store.RunSucceeded, store.RunFailed, store.RunAborted, store.RunCancelled:
		return true
	}
	return false
}

// incarnation returns the incarnation as the API shows it.
func (c *cluster) incarnation(t *testing.T) apitypes.Incarnation {
	t.Helper()
	ctx := t.Context()
	inc, err := c.api.GetIncarnation(ctx, incarnation)
	if err != nil {
		t.Fatalf("reading incarnation %s: %v", incarnation, err)
	}
	return inc
}

// unlock unlocks the error_locked incarnation.
func (c *cluster) unlock(t *testing.T, reason string) {
	t.Helper()
	ctx := t.Context()
	inc, err := c.api.UnlockIncarnation(ctx, incarnation, reason)
	if err != nil {
		t.Fatalf("unlocking %s: %v", incarnation, err)
	}
	if inc.Status != store.IncarnationReady {
		t.Fatalf("after unlock %s is %s, want %s", incarnation, inc.Status, store.IncarnationReady)
	}
}

// task returns the record of the task named name; a task that never ran
// on any host has an empty one.
func task(r apitypes.RunDetail, name string) apitypes.RunTask {
	for _, t := range r.Tasks {
		if t.Name == name {
			return t
		}
	}
	return apitypes.RunTask{Name: name}
}

// hostsOf returns the sorted SIDs of t's results that satisfy keep.
func hostsOf(t apitypes.RunTask, keep func(apitypes.RunHost) bool) []string {
	var out []string
	for _, h := range t.Hosts {
		if keep(h) {
			out = append(out, h.SID)
		}
	}
	slices.Sort(out)
	return out
}

// ran: the host ran the task (not skipped, not unreachable).
func ran(h apitypes.RunHost) bool {
	return h.Status == string(domain.StatusOK) || h.Status == string(domain.StatusChanged) || h.Status == string(domain.StatusFailed)
}

func changed(h apitypes.RunHost) bool { return h.Changed }

func status(s domain.HostStatus) func(apitypes.RunHost) bool {
	return func(h apitypes.RunHost) bool { return h.Status == string(s) }
}

// waves groups the hosts that ran t by wave, in wave order.
func waves(t apitypes.RunTask) [][]string {
	byWave := map[int][]string{}
	for _, h := range t.Hosts {
		if ran(h) || h.Status == string(domain.StatusUnreachable) {
			byWave[h.Wave] = append(byWave[h.Wave], h.SID)
		}
	}
	var out [][]string
	for _, w := range slices.Sorted(maps.Keys(byWave)) {
		slices.Sort(byWave[w])
		out = append(out, byWave[w])
	}
	return out
}

// assertEqual fails the test when got differs from want (nil and empty
// slices and maps are equal).
func assertEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s = %v, want %v (-want +got):\n%s", what, got, want, diff)
	}
}

// describe renders a run record compactly for failure messages.
func describe(r apitypes.RunDetail) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s (%s) %s %s\n", r.ID, r.Scenario, r.Status, r.Error)
	for _, t := range r.Tasks {
		fmt.Fprintf(&b, "  %s %s:", t.Path, t.Name)
		for _, h := range t.Hosts {
			fmt.Fprintf(&b, " %s=%s/w%d", h.SID, h.Status, h.Wave)
			if h.Changed {
				b.WriteString("*")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
