package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/module/custom"
)

// TestBundleShipsCustomModules: a destiny bundle carrying custom modules
// runs them on the soul through the real runner; in check mode a module
// without check_mode is unknown and never started, one with it runs with
// check: true.
func TestBundleShipsCustomModules(t *testing.T) {
	h := newHost(t)
	// Custom modules refuse a soul's --root (their programs cannot be
	// confined): this soul runs unconfined, and its programs only touch
	// the marker in a temporary directory.
	h.runner.Root = ""
	marker := filepath.Join(t.TempDir(), "ran")
	prog := "#!/bin/sh\ncat >/dev/null\n[ \"$SOUL_CHECK\" = 1 ] || touch " + marker + "\necho '{\"changed\":true,\"output\":{\"n\":3}}'\n"
	mk := func(dir, spec string) (string, *dispatch.CustomModule) {
		m, ps := custom.New(dir, []byte(spec), []byte(prog))
		if len(ps) > 0 {
			t.Fatal(ps)
		}
		return m.Name(), executor.Wire(m)
	}
	n1, w1 := mk("plain", "summary: s\noutput:\n  n: {type: integer}\n")
	n2, w2 := mk("checked", "summary: s\ncheck_mode: true\noutput:\n  n: {type: integer}\n")
	main := "tasks:\n  - {name: a, module: service.plain, register: a}\n  - {name: b, module: service.checked}\noutput:\n  n: \"${ register.a.n }\"\n"
	run := func(check bool) domain.Result {
		return executor.RunBundle(context.Background(), &dispatch.Bundle{Destiny: "t", Files: map[string][]byte{"main.yml": []byte(main)},
			Modules: map[string]*dispatch.CustomModule{n1: w1, n2: w2}}, h.facts,
			executor.Options{Check: check, Call: executor.CallerFor(h.runner)})
	}
	r := run(true)
	if len(r.Tasks) != 2 || !r.Tasks[0].Unknown || !strings.Contains(r.Tasks[0].Msg, "check_mode") || !r.Tasks[1].Changed {
		t.Fatalf("check run: %+v", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("check mode started a module without check_mode or changed something")
	}
	r = run(false)
	if r.Failed || r.Output["n"] != int64(3) {
		t.Fatalf("run: %+v", r)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the module did not run")
	}
	w1.SHA256 = strings.Repeat("0", 64)
	if r := run(false); !r.Failed || !strings.Contains(r.Msg, "not the pinned") {
		t.Fatalf("a bundle with a tampered module ran: %+v", r)
	}
}
