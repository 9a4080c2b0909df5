package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunShNamesBenchmarks checks that every name bench/run.sh offers
// runs a benchmark of this package and sets only knobs the benchmarks
// read, and that `all` lists only names it knows — so `bench/run.sh NAME`
// reruns each README table by name (it runs in `go test ./...`, no
// benchmark does).
func TestRunShNamesBenchmarks(t *testing.T) {
	script, err := os.ReadFile("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(data)
	}
	entry := regexp.MustCompile(`(?m)^\t"([a-z0-9-]+)\|([a-z0-9-]+)\|([^|]*)\|([^|]*)\|[^|"]+"$`)
	bench := regexp.MustCompile(`-bench \^(Benchmark\w+)\\\$`)
	entries := entry.FindAllStringSubmatch(string(script), -1)
	if len(entries) < 10 {
		t.Fatalf("found %d benchmark entries in run.sh, want the table of names", len(entries))
	}
	names := map[string]bool{}
	for _, e := range entries {
		name, envs, args := e[1], e[3], e[4]
		names[name] = true
		m := bench.FindStringSubmatch(args)
		if m == nil {
			t.Errorf("run.sh %s: no -bench ^Name$ in %q", name, args)
			continue
		}
		if !strings.Contains(src.String(), "func "+m[1]+"(b *testing.B)") {
			t.Errorf("run.sh %s runs %s, which this package does not declare", name, m[1])
		}
		for _, kv := range strings.Fields(envs) {
			k, _, _ := strings.Cut(kv, "=")
			if !strings.Contains(src.String(), `"`+k+`"`) {
				t.Errorf("run.sh %s sets %s, which no benchmark reads", name, k)
			}
		}
	}
	all := regexp.MustCompile(`(?m)^all=\(([^)]*)\)$`).FindStringSubmatch(string(script))
	if all == nil {
		t.Fatal("run.sh: no all=(...) list")
	}
	for _, n := range strings.Fields(all[1]) {
		if !names[n] {
			t.Errorf("run.sh all lists %s, which is not a benchmark name", n)
		}
	}
}
