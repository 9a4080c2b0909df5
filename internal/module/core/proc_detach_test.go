package core

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A package manager's process is never killed when its context ends: the
// call returns at once saying so, and the process finishes on its own.
func TestPkgCmdNotKilled(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	r, err := runPkgCmd(ctx, nil, "/bin/sh", "-c", "echo started; sleep 1; echo finished >"+done)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 800*time.Millisecond {
		t.Errorf("runPkgCmd returned %v after its context ended, want at once", took)
	}
	if r.rc != -1 || r.killed || !strings.Contains(r.note, "interrupted") || !strings.Contains(r.note, "left running") {
		t.Errorf("result %+v, want rc -1, not killed, an interrupted note", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, err := os.ReadFile(done)
		if err == nil && string(data) == "finished\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process did not finish on its own: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPkgCmdOutput(t *testing.T) {
	r, err := runPkgCmd(context.Background(), map[string]string{"X": "y"}, "sh", "-c", "echo out $X; echo err >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	if r.rc != 3 || r.stdout != "out y\n" || r.stderr != "err\n" || r.note != "" {
		t.Errorf("result %+v", r)
	}
	if r, err := runPkgCmd(context.Background(), nil, "no-such-program-here"); err == nil || r.rc != 127 {
		t.Errorf("missing program: rc %d, err %v", r.rc, err)
	}
}
