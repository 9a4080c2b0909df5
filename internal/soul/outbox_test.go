package soul

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
)

func TestOutboxSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), OutboxDir)
	log := slog.New(slog.DiscardHandler)
	o, err := newOutbox(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	o.put(pendingResult{RunID: "r", TaskID: "run/2/host", Result: domain.Result{Stdout: "two"}})
	o.put(pendingResult{RunID: "r", TaskID: "run/1/host", Result: domain.Result{Stdout: "one"}})
	os.WriteFile(filepath.Join(dir, "junk.json"), []byte("{"), 0o600)

	again, err := newOutbox(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	got := again.list()
	if len(got) != 2 || got[0].TaskID != "run/1/host" || got[0].Result.Stdout != "one" || got[1].Result.Stdout != "two" {
		t.Fatalf("reloaded outbox = %+v", got)
	}
	again.remove("run/1/host")
	again.remove("run/2/host")
	if again.len() != 0 {
		t.Fatal("outbox not empty after remove")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("outbox dir still holds %d files", len(ents))
	}
}
