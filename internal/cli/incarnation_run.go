package cli

import (
	"errors"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() {
	incarnationSubcommands = append(incarnationSubcommands, newIncarnationRunCmd, newIncarnationUpgradeCmd)
}

func newIncarnationRunCmd(g *Globals) *cobra.Command {
	var (
		name, input string
		req         apitypes.StartRunRequest
		ff          followFlags
	)
	c := &cobra.Command{
		Use:   "run [name] --scenario S [--input JSON] [--check] [--wait|--watch]",
		Short: "Run a scenario over an incarnation",
		Long: `Starts a run of a scenario over the incarnation's members. --input takes a
JSON object or @file. --check asks the modules what they would change and
changes (and commits) nothing. Without --wait or --watch it prints the run's
apply_id and returns; --watch shows each task's per-host progress live, and
both exit 1 unless the run succeeded.`,
		Example: `  soulctl incarnation run --name hello-dev --scenario greet --input '{"greeting": "hi"}' --watch
  soulctl incarnation run hello-dev --scenario greet --input '{"greeting": "hi"}' --check --wait
  ID=$(soulctl incarnation run hello-dev --scenario greet --input '{"greeting": "hi"}' -q) && soulctl run watch "$ID"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := nameArg(args, name, "name")
			if err != nil {
				return err
			}
			if req.Input, err = jsonObject(g, "input", input); err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			acc, err := startRun(cmd.Context(), cl, n, req)
			if err != nil {
				return err
			}
			if !ff.any() {
				if ff.printID(g, cmd, acc.View.ApplyID) {
					return nil
				}
				return g.Emit(cmd, acc.JSON, func(w io.Writer) error {
					return startedLines(w, "scenario "+req.Scenario+" on "+n, acc.View.ApplyID)
				})
			}
			r, err := g.awaitRun(cmd, cl, acc.View.ApplyID, ff.watch, ff.timeout)
			if err != nil {
				return err
			}
			if ff.printID(g, cmd, acc.View.ApplyID) {
				return runOutcome(r.View)
			}
			if err := g.emitFollowed(cmd, r, ff.watch); err != nil {
				return err
			}
			return runOutcome(r.View)
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	c.Flags().StringVar(&req.Scenario, "scenario", "", "scenario to run (required)")
	c.Flags().StringVar(&input, "input", "", "scenario input: JSON object or @file")
	c.Flags().BoolVar(&req.Check, "check", false, "check mode: report what would change, change nothing")
	ff.register(c)
	_ = c.MarkFlagRequired("scenario")
	return c
}

func newIncarnationUpgradeCmd(g *Globals) *cobra.Command {
	var (
		name, ref, migrate string
		ff                 followFlags
	)
	c := &cobra.Command{
		Use:   "upgrade [name] --ref REF [--migrate SCENARIO [--wait|--watch]]",
		Short: "Pin an incarnation to another ref of its service (its next runs use it)",
		Long: `Resolves the ref to a commit, validates the service at that commit (every
scenario) and pins the incarnation to it. The committed state must fit the
new commit's state_schema, or the upgrade is refused with the schema error.
--migrate names a scenario of the new commit that runs right after the
switch: the incarnation moves to the new commit only when that run commits
a state that fits the new schema; otherwise it stays on the old one.
Without --migrate nothing runs on the hosts: the next run (for example
soulctl incarnation run NAME --scenario upgrade) uses the new commit.`,
		Example: `  soulctl incarnation upgrade hello-dev --ref v2
  soulctl incarnation upgrade hello-dev --ref v3 --migrate migrate-state --watch`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			if migrate == "" {
				if ff.any() {
					return cmdutil.Usage(errors.New("--wait and --watch follow the migration run: they need --migrate"))
				}
				inc, err := upgradeIncarnation(cmd.Context(), cl, n, ref)
				if err != nil {
					return err
				}
				return g.Emit(cmd, inc.JSON, func(w io.Writer) error { return incarnationDetail(w, inc.View) })
			}
			acc, err := call[accepted](cmd.Context(), cl, http.MethodPost, incPath(n, "upgrade"), nil, apitypes.UpgradeRequest{Ref: ref, Migrate: migrate})
			if err != nil {
				return err
			}
			if !ff.any() {
				if ff.printID(g, cmd, acc.View.ApplyID) {
					return nil
				}
				return g.Emit(cmd, acc.JSON, func(w io.Writer) error {
					return startedLines(w, "upgrade of "+n+" to "+ref+" through "+migrate, acc.View.ApplyID)
				})
			}
			r, err := g.awaitRun(cmd, cl, acc.View.ApplyID, ff.watch, ff.timeout)
			if err != nil {
				return err
			}
			if ff.printID(g, cmd, acc.View.ApplyID) {
				return runOutcome(r.View)
			}
			if err := g.emitFollowed(cmd, r, ff.watch); err != nil {
				return err
			}
			return runOutcome(r.View)
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	c.Flags().StringVar(&ref, "ref", "", "git ref to pin: branch, tag or commit (required)")
	c.Flags().StringVar(&migrate, "migrate", "", "scenario of the new commit that migrates the state (runs right after the switch)")
	ff.register(c)
	_ = c.MarkFlagRequired("ref")
	return c
}

// emitFollowed prints a run that was followed: the full run for -o
// json|yaml (and Exec), the run detail after --wait, nothing more after
// --watch (its progress ended with the summary).
func (g *Globals) emitFollowed(cmd *cobra.Command, r raw[runView], watched bool) error {
	return g.Emit(cmd, r.JSON, func(w io.Writer) error {
		if watched {
			return nil
		}
		return runDetail(w, r.View)
	})
}
