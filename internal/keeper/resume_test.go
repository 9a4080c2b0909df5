package keeper_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
)

// TestResumeAndDrift drives SPEC §8.8 and §8.9 end to end with an
// in-process keeper and three real soul processes. A serial: 1 rollout
// fails on the second host (the test breaks it: its release directory is
// a file); the test repairs it; the resume touches only hosts 2-3 (host
// 1's release file, edited meanwhile, keeps its content and mtime), runs the probe again, commits once,
// and history links both runs. Then a hand edit of a managed file on one
// host shows up as drift, with its diff and in the metrics, and is gone
// after a run of create.
func TestResumeAndDrift(t *testing.T) {
	f := inProcessKeeper(t, "")
	f.startSouls()
	f.registerFleet()
	f.createFleet()
	histBefore := len(f.history())

	broken := filepath.Join(f.root("soul-b"), "srv/fleet/release")
	if err := os.WriteFile(broken, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := f.run("rollout", nil, false)
	if failed.Status != store.RunFailed || f.incarnation().Status != store.IncarnationErrorLocked {
		t.Fatalf("rollout with soul-b broken: %s (%s)", failed.Status, failed.Error)
	}
	if f.file("soul-a", "srv/fleet/release/current") != "r2\n" || f.file("soul-c", "srv/fleet/release/current") != "" {
		t.Fatalf("after the failed rollout: soul-a %q, soul-c %q", f.file("soul-a", "srv/fleet/release/current"), f.file("soul-c", "srv/fleet/release/current"))
	}
	// soul-a's file is changed behind the keeper's back: a resume that
	// touched soul-a again would put r2 back (and change the mtime).
	marker := "wave 1 is done, leave it alone\n"
	if err := os.WriteFile(filepath.Join(f.root("soul-a"), "srv/fleet/release/current"), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	aTime := f.mtime("soul-a", "srv/fleet/release/current")

	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	id, err := f.c.ResumeRun(f.ctx, failed.ID, apitypes.ResumeRequest{Reason: "soul-b's release dir repaired"})
	if err != nil {
		t.Fatal(err)
	}
	resumed := f.awaitRun(id, 30*time.Second)
	if resumed.Status != store.RunSucceeded || resumed.ResumedFrom != failed.ID {
		t.Fatalf("resumed run: %s %q, resumed_from %q", resumed.Status, resumed.Error, resumed.ResumedFrom)
	}
	if got := f.mtime("soul-a", "srv/fleet/release/current"); !got.Equal(aTime) || f.file("soul-a", "srv/fleet/release/current") != marker {
		t.Errorf("soul-a's release was rewritten (mtime %s → %s): an earlier wave was touched again", aTime, got)
	}
	for _, sid := range []string{"soul-b", "soul-c"} {
		if got := f.file(sid, "srv/fleet/release/current"); got != "r2\n" {
			t.Errorf("%s release = %q after the resume", sid, got)
		}
	}
	rollout := hosts(resumed, "Roll out the release")
	if rollout["soul-a"].Data["carried_from"] != failed.ID || rollout["soul-b"].Data["carried_from"] != nil || rollout["soul-b"].Wave != 2 {
		t.Errorf("rollout rows of the resumed run: %+v", rollout)
	}
	for sid, h := range hosts(resumed, "Probe the motd") {
		if h.Data["carried_from"] != nil {
			t.Errorf("the probe on %s was carried, not run again", sid)
		}
	}
	hist := f.history()
	if len(hist) != histBefore+1 || hist[0].RunID != id || hist[0].ResumedFrom != failed.ID {
		t.Errorf("history after the resume: %d entries (was %d), newest %+v", len(hist), histBefore, hist[0])
	}

	// Drift: a hand edit on soul-c.
	if err := os.WriteFile(filepath.Join(f.root("soul-c"), "srv/fleet/motd"), []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkID, err := f.c.CheckDrift(f.ctx, fleetInc, "")
	if err != nil {
		t.Fatal(err)
	}
	f.awaitRun(checkID, 30*time.Second)
	d, err := f.c.GetDrift(f.ctx, fleetInc)
	if err != nil || d.Report == nil || d.Report.RunID != checkID {
		t.Fatalf("drift: %+v %v", d, err)
	}
	c := d.Report.Hosts["soul-c"]
	if !d.Report.Drifted || c.Status != store.DriftDrifted || len(c.Tasks) != 1 || c.Tasks[0].Task != "Write the motd" ||
		!strings.Contains(c.Tasks[0].Diff, "edited by hand") || !strings.Contains(c.Tasks[0].Diff, "Hello from soul-c") {
		t.Errorf("soul-c's drift: %+v (report %+v)", c, d.Report)
	}
	for _, sid := range []string{"soul-a", "soul-b"} {
		if h := d.Report.Hosts[sid]; h.Status != store.DriftClean {
			t.Errorf("%s: %+v, want clean", sid, h)
		}
	}
	if got := f.file("soul-c", "srv/fleet/motd"); got != "edited by hand\n" {
		t.Errorf("the drift check changed soul-c's motd: %q", got)
	}
	if inc := f.incarnation(); inc.Status != store.IncarnationReady {
		t.Errorf("after the drift check: %s", inc.Status)
	}
	if m := f.metrics(); !strings.Contains(m, `soulstack_incarnation_drifted{incarnation="fleet-1"} 1`) {
		t.Errorf("metrics do not show the drift")
	}

	// A run of create puts the file back: no drift any more.
	if r := f.run("create", map[string]any{"motd": "Hello"}, false); r.Status != store.RunSucceeded {
		t.Fatalf("create: %s %s", r.Status, r.Error)
	}
	checkID, err = f.c.CheckDrift(f.ctx, fleetInc, "")
	if err != nil {
		t.Fatal(err)
	}
	f.awaitRun(checkID, 30*time.Second)
	if d, _ = f.c.GetDrift(f.ctx, fleetInc); d.Report.Drifted || d.Report.Hosts["soul-c"].Status != store.DriftClean {
		t.Errorf("drift after the fix: %+v", d.Report)
	}
	if m := f.metrics(); !strings.Contains(m, `soulstack_incarnation_drifted{incarnation="fleet-1"} 0`) {
		t.Errorf("metrics still show the drift")
	}
}

// metrics reads the keeper's /metrics.
func (f *fleet) metrics() string {
	f.t.Helper()
	resp, err := http.Get("http://" + f.addr + "/metrics")
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}
