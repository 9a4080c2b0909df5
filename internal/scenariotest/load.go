package scenariotest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/module"
	// The modules the DSL validates against and stubs name.
	_ "github.com/soulstack/soulstack/internal/module/core"
	_ "github.com/soulstack/soulstack/internal/stateschema/dslhook" // state_schema checking when loading services
)

// Load reads and validates the service repository in dir and parses every
// scenario test in it (scenario/<name>/tests/*.yml and *.yaml, sorted by
// scenario and file name). An invalid repository is an error holding
// dsl.Problems; invalid tests, one holding Problems.
func Load(dir string) (*dsl.Service, []*Test, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read service repository: %w", err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a directory", dir)
	}
	return LoadFS(os.DirFS(dir))
}

// LoadFS is Load for a repository as a file system.
func LoadFS(fsys fs.FS) (*dsl.Service, []*Test, error) {
	svc, problems := dsl.LoadFS(fsys)
	if len(problems) > 0 {
		return nil, nil, problems
	}
	var tests []*Test
	var all Problems
	names := make([]string, 0, len(svc.Scenarios))
	for n := range svc.Scenarios {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		sc := svc.Scenarios[n]
		files := make([]string, 0)
		for f := range sc.Files {
			dir, base := path.Split(f)
			if dir == "tests/" && (strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".yaml")) {
				files = append(files, f)
			}
		}
		slices.Sort(files)
		for _, f := range files {
			file := sc.Dir + "/" + f
			name := strings.TrimSuffix(strings.TrimSuffix(path.Base(f), ".yml"), ".yaml")
			t, err := Parse(file, name, sc.Files[f], svc, sc)
			var ps Problems
			switch {
			case errors.As(err, &ps):
				all = append(all, ps...)
			case err != nil:
				all = append(all, Problem{File: file, Message: err.Error()})
			default:
				tests = append(tests, t)
			}
		}
	}
	if len(all) > 0 {
		return svc, nil, all
	}
	return svc, tests, nil
}

func knownModule(name string) bool {
	_, ok := module.Lookup(name)
	return ok
}
