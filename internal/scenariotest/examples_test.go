package scenariotest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/soulstack/soulstack/internal/scenariotest"
)

// TestExamples runs the scenario tests of every example service.
func TestExamples(t *testing.T) {
	repos, err := filepath.Glob("../../examples/*/service.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range repos {
		dir := filepath.Dir(m)
		svc, tests, err := scenariotest.Load(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, tc := range tests {
			t.Run(filepath.Base(dir)+"/"+tc.Scenario+"/"+tc.Name, func(t *testing.T) {
				t.Parallel()
				out := scenariotest.Run(context.Background(), t.TempDir(), svc, tc)
				if out.Err != nil {
					t.Fatal(out.Err)
				}
				for _, f := range out.Failures {
					t.Error(f)
				}
			})
		}
	}
}
