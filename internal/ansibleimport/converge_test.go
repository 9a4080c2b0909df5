package ansibleimport_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/ansibleimport"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/executor"
	_ "github.com/soulstack/soulstack/internal/module/core" // the modules the destiny calls
	"github.com/soulstack/soulstack/internal/scenariotest"
	"github.com/soulstack/soulstack/internal/soul"
)

// TestImportedRoleConvergesAsAnsible imports examples/ansible/motd (every
// task exact), checks the repository validates and its generated scenario
// test passes, then runs the destiny as `soul apply --local --root` does:
// the first run writes exactly the files real Ansible wrote for the role
// (testdata/converge/motd, made by converge/regen.sh) and fires the
// handler; the second changes nothing and the handler stays quiet.
func TestImportedRoleConvergesAsAnsible(t *testing.T) {
	r, err := ansibleimport.LoadRole("../../examples/ansible/motd")
	if err != nil {
		t.Fatal(err)
	}
	im, err := ansibleimport.ImportRole(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := im.Counts(); n[ansibleimport.Exact] != len(im.Rows) {
		t.Fatalf("every task of motd should be exact: %v\n%s", n, im.Files["IMPORT.md"])
	}
	repo := filepath.Join(t.TempDir(), "motd")
	if err := im.WriteTo(repo); err != nil {
		t.Fatal(err)
	}
	svc, tests, err := scenariotest.Load(repo)
	if err != nil {
		t.Fatalf("the imported repository does not load: %v", err)
	}
	if len(tests) == 0 {
		t.Fatal("the import generated no scenario test")
	}
	for _, tc := range tests {
		out := scenariotest.Run(context.Background(), t.TempDir(), svc, tc)
		if out.Err != nil {
			t.Fatalf("%s: %v", tc.Name, out.Err)
		}
		for _, f := range out.Failures {
			t.Errorf("%s: %s", tc.Name, f)
		}
	}

	root := t.TempDir()
	first := applyLocal(t, filepath.Join(repo, "destiny", "motd"), root)
	if first.Failed {
		t.Fatalf("first run failed: %s %+v", first.Msg, first.Tasks)
	}
	byName := func(res domain.Result, name string) domain.TaskResult {
		for _, tr := range flatten(res.Tasks) {
			if tr.Name == name {
				return tr
			}
		}
		t.Fatalf("no result for %q in %+v", name, res.Tasks)
		return domain.TaskResult{}
	}
	if h := byName(first, "note the new banner"); !h.Changed {
		t.Errorf("the handler did not run on the first run: %+v", h)
	}
	want := "testdata/converge/motd"
	ents, err := os.ReadDir(want)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]string{}
	mb, err := os.ReadFile("testdata/converge/motd.modes")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(mb)), "\n") {
		name, mode, _ := strings.Cut(l, " ")
		modes[name] = mode
	}
	for _, e := range ents {
		wb, _ := os.ReadFile(filepath.Join(want, e.Name()))
		gb, err := os.ReadFile(filepath.Join(root, "etc/motd.d", e.Name()))
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		if string(gb) != string(wb) {
			t.Errorf("%s differs from Ansible's:\n got %q\nwant %q", e.Name(), gb, wb)
		}
		gi, _ := os.Stat(filepath.Join(root, "etc/motd.d", e.Name()))
		if got := fmt.Sprintf("%o", gi.Mode().Perm()); got != modes[e.Name()] {
			t.Errorf("%s: mode %s, Ansible's %s", e.Name(), got, modes[e.Name()])
		}
	}
	second := applyLocal(t, filepath.Join(repo, "destiny", "motd"), root)
	for _, tr := range flatten(second.Tasks) {
		if len(tr.Tasks) > 0 {
			continue // a block: its tasks say
		}
		if tr.Changed || tr.Failed {
			t.Errorf("second run: %s changed=%v failed=%v %s", tr.Name, tr.Changed, tr.Failed, tr.Msg)
		}
	}
	if h := byName(second, "note the new banner"); !h.Skipped {
		t.Errorf("the handler ran on the second run: %+v", h)
	}
}

func applyLocal(t *testing.T, dir, root string) domain.Result {
	t.Helper()
	files, err := executor.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	facts, err := soul.CollectFacts(soul.FactsOptions{SID: "motd-host", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	// The confined root reports no os-release: the host is Debian, as
	// the one Ansible ran on.
	facts["os"] = map[string]any{"family": "debian", "name": "debian", "distribution": "debian", "version": "12", "codename": "bookworm", "arch": "amd64"}
	runner := &soul.ModuleRunner{Root: root, Facts: func() map[string]any { return facts }}
	return executor.RunBundle(context.Background(), &dispatch.Bundle{Destiny: "motd", Files: files}, facts,
		executor.Options{Call: executor.CallerFor(runner)})
}

// flatten lists the results of a block's tasks with the block's own.
func flatten(ts []domain.TaskResult) []domain.TaskResult {
	var out []domain.TaskResult
	for _, tr := range ts {
		out = append(out, tr)
		out = append(out, flatten(tr.Tasks)...)
	}
	return out
}
