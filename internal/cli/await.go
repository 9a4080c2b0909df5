package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

// followFlags are --wait and --watch of the commands that start a run.
type followFlags struct {
	wait, watch, quiet bool
	timeout            time.Duration
}

func (f *followFlags) register(c *cobra.Command) {
	c.Flags().BoolVar(&f.wait, "wait", false, "wait until the run ends; exit 1 unless it succeeded")
	c.Flags().BoolVar(&f.watch, "watch", false, "show the run's progress live until it ends (implies --wait)")
	c.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the run's apply_id (after it ended, with --wait)")
	c.MarkFlagsMutuallyExclusive("quiet", "watch")
	addTimeoutFlag(c, &f.timeout)
}

// addTimeoutFlag is --timeout of the commands that follow a run.
func addTimeoutFlag(c *cobra.Command, d *time.Duration) {
	c.Flags().DurationVar(d, "timeout", 0, "with --wait/--watch: stop following after this long and exit 1; the run goes on (0: no limit)")
}

// printID is -q's output: the apply_id alone.
func (f followFlags) printID(g *Globals, cmd *cobra.Command, id string) bool {
	if !f.quiet || g.capture {
		return false
	}
	fmt.Fprintln(cmd.OutOrStdout(), id)
	return true
}

func (f followFlags) any() bool { return f.wait || f.watch }

// awaitRun follows run id to its end, showing progress when watch is set
// (on stdout for tables, on stderr when stdout carries JSON or YAML, never
// in Exec mode), and returns the final run.
// A timeout > 0 bounds the following, not the run: when it passes, the
// run goes on and the error says how to follow it again.
func (g *Globals) awaitRun(cmd *cobra.Command, cl *apiclient.Client, id string, watch bool, timeout time.Duration) (raw[runView], error) {
	var obs observer
	if watch && !g.capture {
		w := cmd.OutOrStdout()
		if f, _ := g.format(); f != FormatTable {
			w = cmd.ErrOrStderr()
		}
		p := newProgress(w, g.isTerminal(w))
		obs = p
	}
	ctx := cmd.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	r, err := follow(ctx, cl, id, obs)
	if err != nil && timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) && cmd.Context().Err() == nil {
		return r, cmdutil.Failed(fmt.Errorf("run %s did not end within --timeout %s; it goes on: follow it with soulctl run watch %s", id, timeout, id))
	}
	if err != nil {
		return r, cmdutil.Failed(fmt.Errorf("following run %s: %w", id, err))
	}
	return r, nil
}

// runOutcome is nil for a run that succeeded and an exit-1 error otherwise,
// for commands to return after printing their result.
func runOutcome(r runView) error {
	if r.Status == apitypes.RunSucceeded {
		return nil
	}
	msg := fmt.Sprintf("run %s %s", r.ApplyID, r.Status)
	if r.Error != "" {
		msg += ": " + r.Error
	}
	if r.Incarnation != "" && r.Status != apitypes.RunCancelled {
		msg += fmt.Sprintf(" (incarnation %s is locked until `soulctl incarnation unlock --name %s --reason …`)", r.Incarnation, r.Incarnation)
	}
	if r.Check {
		msg = fmt.Sprintf("check run %s %s", r.ApplyID, r.Status)
		if r.Error != "" {
			msg += ": " + r.Error
		}
	}
	return cmdutil.Failed(fmt.Errorf("%s", msg))
}

// startedLines is the table form of a run that was started and not
// followed.
func startedLines(w io.Writer, what, id string) error {
	_, err := fmt.Fprintf(w, "%s: run %s started\nfollow it with: soulctl run watch %s\n", what, id, id)
	return err
}
