package keeper_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
)

// TestCloudExecProviderFaults: an exec provider that exits non-zero,
// prints no JSON, hangs, returns fewer instances than asked, or reports an
// instance whose soul never connects fails the task with the reason and
// locks the incarnation; what was created stays recorded and the next run
// adopts it (each soul was started exactly once: never duplicated, never
// orphaned); destroy deletes everything recorded.
func TestCloudExecProviderFaults(t *testing.T) {
	r := newCloudRig(t)
	r.provider("bad", "fail", "3s")
	if _, err := r.c.SetCloudProfile(r.ctx, "badp", apitypes.CloudProfileRequest{Provider: "bad"}); err != nil {
		t.Fatal(err)
	}
	r.register("cloudfault", "testdata/cloudfault")
	acc, err := r.c.CreateIncarnation(r.ctx, apitypes.CreateIncarnationRequest{Name: "f", Service: "cloudfault", Covens: []string{"web"}, Input: map[string]any{"count": 1}})
	if err != nil {
		t.Fatal(err)
	}
	failed := func(run apitypes.RunDetail, want string) {
		t.Helper()
		inc, err := r.c.GetIncarnation(r.ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != store.RunFailed || !strings.Contains(run.Error, want) || inc.Status != store.IncarnationErrorLocked {
			t.Fatalf("run %s: %s %q (incarnation %s), want failed with %q\n%s", run.ID, run.Status, run.Error, inc.Status, want, runJSON(run))
		}
		r.noToken("a failed run", run)
		if _, err := r.c.UnlockIncarnation(r.ctx, "f", "cloud fault test"); err != nil {
			t.Fatal(err)
		}
	}
	step := func(mode string, count int) apitypes.RunDetail {
		t.Helper()
		r.provider("bad", mode, "3s")
		return r.runOn("f", "create", map[string]any{"count": count}, false)
	}

	failed(r.awaitRun(acc.ApplyID, 30*time.Second), "exited with status 3: testprovider: quota exceeded")
	if got := r.instances("f"); !slices.Equal(got, []string{"f-badp-1="}) {
		t.Fatalf("after the failed create, recorded %v, want f-badp-1 without id", got)
	}
	failed(step("garbage", 1), "printed no JSON list of instances")
	pid1 := r.pid("f-badp-1")
	if pid1 == "" {
		t.Fatal("the garbage-printing provider started no soul")
	}
	failed(step("hang", 2), "did not answer within 3s")
	pid2 := r.pid("f-badp-2")
	// The fewer failure is resumed (run resume) rather than re-run: the
	// resumed step adopts the instance the provider did not report.
	r.provider("bad", "fewer", "3s")
	fewer := r.runOn("f", "create", map[string]any{"count": 3}, false)
	if fewer.Status != store.RunFailed || !strings.Contains(fewer.Error, "returned 0 instance(s) for f-badp-3") {
		t.Fatalf("fewer: %s %q", fewer.Status, fewer.Error)
	}
	pid3 := r.pid("f-badp-3")
	if got := r.instances("f"); len(got) != 3 || got[0] != "f-badp-1=proc-"+pid1 || got[1] != "f-badp-2=proc-"+pid2 || got[2] != "f-badp-3=" {
		t.Fatalf("recorded %v: the instances of the garbage and hang runs adopted, f-badp-3 still unconfirmed", got)
	}

	r.provider("bad", "", "3s")
	resumed, err := r.c.ResumeRun(r.ctx, fewer.ID, apitypes.ResumeRequest{Reason: "the provider is healthy again"})
	if err != nil {
		t.Fatal(err)
	}
	ok := r.awaitRun(resumed, 60*time.Second)
	if ok.Status != store.RunSucceeded || ok.ResumedFrom != fewer.ID {
		t.Fatalf("the healthy re-run: %s %s\n%s", ok.Status, ok.Error, runJSON(ok))
	}
	inc, _ := r.c.GetIncarnation(r.ctx, "f")
	if !slices.Equal(inc.Members, []string{"f-badp-1", "f-badp-2", "f-badp-3"}) {
		t.Fatalf("members %v", inc.Members)
	}
	if r.pid("f-badp-1") != pid1 || r.pid("f-badp-2") != pid2 || r.pid("f-badp-3") != pid3 {
		t.Errorf("an instance was created twice: pids %s %s %s, were %s %s %s", r.pid("f-badp-1"), r.pid("f-badp-2"), r.pid("f-badp-3"), pid1, pid2, pid3)
	}

	// A run whose cloud step added a member and then failed resumes: the
	// added member does not count as a change of membership.
	blocker := filepath.Join(r.procs, "f-badp-4", "root", "blocked")
	if err := os.MkdirAll(filepath.Dir(blocker), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocker, []byte("a file where a directory is wanted"), 0o600); err != nil {
		t.Fatal(err)
	}
	grow := r.runOn("f", "grow", map[string]any{"count": 4}, false)
	if grow.Status != store.RunFailed || !strings.Contains(grow.Error, "Write the marker") {
		t.Fatalf("grow: %s %q", grow.Status, grow.Error)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	id, err := r.c.ResumeRun(r.ctx, grow.ID, apitypes.ResumeRequest{Reason: "the path is free now"})
	if err != nil {
		t.Fatalf("resuming a run whose cloud step added members: %v", err)
	}
	if run := r.awaitRun(id, 60*time.Second); run.Status != store.RunSucceeded {
		t.Fatalf("resumed grow: %s %s", run.Status, run.Error)
	}
	pid4 := r.pid("f-badp-4")

	failed(step("noconnect", 5), "the souls of f-badp-5 did not connect")
	if r.pid("f-badp-4") != pid4 {
		t.Error("f-badp-4 was created again")
	}
	if got := r.instances("f"); len(got) != 5 || got[4] != "f-badp-5=proc-0" {
		t.Fatalf("recorded %v", got)
	}
	if err := r.c.Do(r.ctx, "DELETE", "/v1/incarnations/f", map[string][]string{"destroy": {"true"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"f-badp-1", "f-badp-2", "f-badp-3", "f-badp-4", "f-badp-5"} {
		if r.pid(n) != "" {
			t.Errorf("%s survived destroy", n)
		}
	}
}
