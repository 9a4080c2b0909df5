package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/config"
)

// TestRunsKeep: runs.keep reads from YAML (a bound left out keeps its
// default), turns into the store's retention, and bad values are named.
func TestRunsKeep(t *testing.T) {
	if d := config.Default().Runs.Keep; d.Age.D() != 30*24*time.Hour || d.Count != 1000 || d.Interval.D() != 10*time.Minute ||
		d.Records.Age.D() != 365*24*time.Hour || d.Records.Count != 10000 {
		t.Errorf("default runs.keep = %+v", d)
	}
	path := filepath.Join(t.TempDir(), "keeper.yaml")
	if err := os.WriteFile(path, []byte("data_dir: x\nruns:\n  keep:\n    age: 0s\n    count: 50\n    records:\n      count: 500\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Validate(); err != nil {
		t.Fatal(err)
	}
	if r := k.Runs.Keep.Retention(); r.MaxAge != 0 || r.MaxCount != 50 || !r.Enabled() || k.Runs.Keep.Interval.D() != 10*time.Minute ||
		r.RecordMaxCount != 500 || r.RecordMaxAge != 365*24*time.Hour {
		t.Errorf("runs.keep read as %+v (retention %+v)", k.Runs.Keep, r)
	}
	k.Runs.Keep = config.RunsKeep{Age: config.Duration(-time.Hour), Count: -1, Interval: 0,
		Records: config.RecordsKeep{Age: config.Duration(-time.Hour), Count: -1}}
	err = k.Validate()
	for _, want := range []string{"runs.keep.age", "runs.keep.count", "runs.keep.interval", "runs.keep.records.age", "runs.keep.records.count"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error does not name %s: %v", want, err)
		}
	}
}

// TestRunsMaxLoopItems: runs.max_loop_items reads from keeper.yaml (0, the
// engine's default of 10,000, when left out) and must not be negative.
func TestRunsMaxLoopItems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keeper.yaml")
	if err := os.WriteFile(path, []byte("data_dir: x\nruns:\n  max_loop_items: 500\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Validate(); err != nil || k.Runs.MaxLoopItems != 500 {
		t.Fatalf("max_loop_items = %d, err %v", k.Runs.MaxLoopItems, err)
	}
	k.Runs.MaxLoopItems = -1
	if err := k.Validate(); err == nil || !strings.Contains(err.Error(), "runs.max_loop_items") {
		t.Fatalf("Validate = %v, want runs.max_loop_items named", err)
	}
}
