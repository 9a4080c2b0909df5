package dsl

import (
	"os"
	"path/filepath"
	"testing"

	_ "github.com/soulstack/soulstack/internal/module/core"
)

// examplesDir holds the example service repos (seeds 000, 001, 002).
const examplesDir = "../../examples"

// exampleRepos lists the service repositories under examples/ (a directory
// with a service.yml).
func exampleRepos(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(examplesDir, e.Name(), "service.yml")); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestExamplesValidate(t *testing.T) {
	repos := exampleRepos(t)
	for _, want := range []string{"redis", "the-service", "my-service"} {
		found := false
		for _, r := range repos {
			found = found || r == want
		}
		if !found {
			t.Errorf("examples/%s is missing", want)
		}
	}
	for _, name := range repos {
		t.Run(name, func(t *testing.T) {
			svc, problems := Load(filepath.Join(examplesDir, name))
			for _, p := range problems {
				t.Errorf("%s", p)
			}
			for _, w := range svc.Warnings {
				t.Errorf("warning: %s (examples show the safe form)", w)
			}
			if svc == nil || len(svc.Scenarios) == 0 {
				t.Fatalf("no scenarios loaded")
			}
			if svc.Manifest.Name != name {
				t.Errorf("service name = %q, want %q", svc.Manifest.Name, name)
			}
		})
	}
}
