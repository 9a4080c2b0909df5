package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/dsl"
	// The module schemas validate params.
	_ "github.com/soulstack/soulstack/internal/module/core"
	_ "github.com/soulstack/soulstack/internal/stateschema/dslhook" // state_schema checking when loading services
)

// scenarioSubcommands are the verbs of `soulctl scenario`; each verb file
// appends its constructor in init() (validate here, test in its own file).
var scenarioSubcommands []func(*Globals) *cobra.Command

func init() {
	subcommands = append(subcommands, newScenarioCmd)
	scenarioSubcommands = append(scenarioSubcommands, newScenarioValidateCmd)
}

// newScenarioCmd is the `scenario` parent command: offline work on a
// service repository checkout.
func newScenarioCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "scenario",
		Short: "Validate and test a service repository offline (no Keeper needed)",
	}
	for _, sub := range scenarioSubcommands {
		c.AddCommand(sub(g))
	}
	return c
}

func newScenarioValidateCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate <repo-dir>",
		Short: "Check a service repository fail-closed, as the Keeper does before a run",
		Long: `Loads service.yml, essence/, modules/, scenario/ and destiny/ of a service repository
and reports every problem as file:line:col: message (exit 2), or a one-line
summary (exit 0). With -o json (or yaml) the problems are printed as a list
of {file, line, col, key, message}. Warnings (advice that does not fail
validation, such as an unquoted ${ input.x } in a shell command line) are
printed as file:line:col: warning: message (on stderr with -o json|yaml).
Works offline.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.capture {
				return errLocalFiles("scenario validate")
			}
			return runScenarioValidate(cmd.OutOrStdout(), cmd.ErrOrStderr(), g.Output, args[0])
		},
	}
}

func runScenarioValidate(out, errOut io.Writer, format, dir string) error {
	switch format {
	case "", "table", "json", "yaml":
	default:
		return cmdutil.Usage(fmt.Errorf("unknown output format %q: use table, json or yaml", format))
	}
	svc, problems := dsl.Load(dir)
	// Paths relative to the current directory, so editors can jump to them.
	for i := range problems {
		problems[i].Pos.File = filepath.Join(dir, problems[i].Pos.File)
	}
	var warnings dsl.Problems
	if svc != nil {
		warnings = svc.Warnings
	}
	for i := range warnings {
		warnings[i].Pos.File = filepath.Join(dir, warnings[i].Pos.File)
	}
	// Warnings do not fail validation: in the table they come first, with
	// the problems; with -o json|yaml on stderr, so stdout stays the list.
	warnOut := out
	if format == "json" || format == "yaml" {
		warnOut = errOut
	}
	for _, w := range warnings {
		fmt.Fprintf(warnOut, "%s: warning: %s\n", w.Pos, w.Message)
	}
	switch format {
	case "json":
		if problems == nil {
			problems = dsl.Problems{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(problems); err != nil {
			return cmdutil.Failed(fmt.Errorf("writing JSON: %w", err))
		}
	case "yaml":
		if err := writeProblemsYAML(out, problems); err != nil {
			return cmdutil.Failed(err)
		}
	default:
		if len(problems) == 0 {
			c := svc.Counts()
			mods := ""
			if n := len(svc.Modules); n > 0 {
				mods = ", " + plural(n, "custom module")
			}
			if n := len(svc.Rules); n > 0 {
				mods += ", " + plural(n, "rule")
			}
			fmt.Fprintf(out, "ok: service %s — %s, %s, %s%s\n", svc.Manifest.Name,
				plural(c.Scenarios, "scenario"), plural(c.Destinies, "destiny"), plural(c.Tasks, "task"), mods)
		}
		for _, p := range problems {
			fmt.Fprintln(out, p.String())
		}
	}
	if len(problems) > 0 {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("%s in %s", plural(len(problems), "problem"), dir)}
	}
	return nil
}

// writeProblemsYAML prints problems in the same shape as the JSON list.
func writeProblemsYAML(out io.Writer, problems dsl.Problems) error {
	b, err := json.Marshal(problems)
	if err != nil {
		return fmt.Errorf("encoding problems: %w", err)
	}
	var list []map[string]any
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("encoding problems: %w", err)
	}
	if list == nil {
		list = []map[string]any{}
	}
	enc := yaml.NewEncoder(out)
	defer enc.Close()
	if err := enc.Encode(list); err != nil {
		return fmt.Errorf("writing YAML: %w", err)
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if word == "destiny" {
		return fmt.Sprintf("%d destinies", n)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
