package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/scenariotest"
)

func init() {
	scenarioSubcommands = append(scenarioSubcommands, newScenarioTestCmd)
}

func newScenarioTestCmd(g *Globals) *cobra.Command {
	var pattern string
	c := &cobra.Command{
		Use:   "test <repo-dir>",
		Short: "Run a service repository's scenario tests offline against simulated hosts",
		Long: `Runs every scenario/<name>/tests/*.yml of a service repository with the real
run engine, a throw-away SQLite store and simulated hosts answering from the
tests' module stubs — no Keeper, no souls. Prints one PASS/FAIL line per test
with the expectations that did not hold. Exit 0 when all pass, 1 when one
fails, 2 when the repository or a test file is invalid.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.capture {
				return errLocalFiles("scenario test")
			}
			f, err := g.format()
			if err != nil {
				return err
			}
			if f == FormatTable {
				return runScenarioTest(cmd.Context(), cmd.OutOrStdout(), args[0], pattern, nil)
			}
			// -o json|yaml: one entry per test on stdout once all ran, the
			// human lines on stderr (the
			// exit code is the same as the table form's).
			var results []scenarioTestResult
			rerr := runScenarioTest(cmd.Context(), cmd.ErrOrStderr(), args[0], pattern, &results)
			if results == nil && rerr != nil {
				return rerr
			}
			if err := g.Emit(cmd, nonNilList(results), nil); err != nil {
				return err
			}
			return rerr
		},
	}
	c.Flags().StringVar(&pattern, "run", "", "run only tests whose <scenario>/<test> matches this regular expression")
	return c
}

// scenarioTestResult is one test's outcome in `scenario test -o json|yaml`.
type scenarioTestResult struct {
	Test     string   `json:"test"` // <scenario>/<test>
	File     string   `json:"file"`
	Passed   bool     `json:"passed"`
	Seconds  float64  `json:"seconds"`
	Error    string   `json:"error,omitempty"`
	Failures []string `json:"failures,omitempty"`
}

func nonNilList[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// runScenarioTest runs the tests, printing the table form to out; results,
// when not nil, also receives each test's outcome.
func runScenarioTest(ctx context.Context, out io.Writer, dir, pattern string, results *[]scenarioTestResult) error {
	var re *regexp.Regexp
	if pattern != "" {
		var err error
		if re, err = regexp.Compile(pattern); err != nil {
			return cmdutil.Usage(fmt.Errorf("--run: %w", err))
		}
	}
	svc, tests, err := scenariotest.Load(dir)
	if err != nil {
		var dp dsl.Problems
		var tp scenariotest.Problems
		switch {
		case errors.As(err, &dp):
			for _, p := range dp {
				p.Pos.File = filepath.Join(dir, p.Pos.File)
				fmt.Fprintln(out, p.String())
			}
			return cmdutil.Usage(fmt.Errorf("%s in %s: fix them before testing (soulctl scenario validate)", plural(len(dp), "problem"), dir))
		case errors.As(err, &tp):
			for _, p := range tp {
				p.File = filepath.Join(dir, p.File)
				fmt.Fprintln(out, p.Error())
			}
			return cmdutil.Usage(fmt.Errorf("%s in the tests of %s", plural(len(tp), "problem"), dir))
		}
		return cmdutil.Usage(err)
	}
	tmp, err := os.MkdirTemp("", "soulctl-scenario-test-")
	if err != nil {
		return cmdutil.Failed(fmt.Errorf("creating a temporary directory: %w", err))
	}
	defer os.RemoveAll(tmp)
	ran, failed := 0, 0
	for i, t := range tests {
		id := t.Scenario + "/" + t.Name
		if re != nil && !re.MatchString(id) {
			continue
		}
		ran++
		tdir := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.Mkdir(tdir, 0o700); err != nil {
			return cmdutil.Failed(err)
		}
		o := scenariotest.Run(ctx, tdir, svc, t)
		if results != nil {
			r := scenarioTestResult{Test: id, File: filepath.Join(dir, t.File), Passed: o.Passed(), Seconds: o.Duration.Seconds(), Failures: o.Failures}
			if o.Err != nil {
				r.Error = o.Err.Error()
			}
			*results = append(*results, r)
		}
		if o.Passed() {
			fmt.Fprintf(out, "PASS %s (%.2fs)\n", id, o.Duration.Seconds())
			continue
		}
		failed++
		fmt.Fprintf(out, "FAIL %s (%.2fs) %s\n", id, o.Duration.Seconds(), filepath.Join(dir, t.File))
		if o.Err != nil {
			fmt.Fprintf(out, "    %s\n", o.Err)
		}
		for _, f := range o.Failures {
			fmt.Fprintf(out, "    %s\n", strings.ReplaceAll(f, "\n", "\n    "))
		}
	}
	switch {
	case ran == 0 && re != nil:
		return cmdutil.Usage(fmt.Errorf("no test matches --run %q", pattern))
	case ran == 0:
		fmt.Fprintf(out, "no scenario tests in %s (add scenario/<name>/tests/*.yml)\n", dir)
		return nil
	case failed > 0:
		return cmdutil.Failed(fmt.Errorf("%d of %s failed", failed, plural(ran, "test")))
	}
	fmt.Fprintf(out, "ok: %s passed\n", plural(ran, "test"))
	return nil
}
