package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() {
	incarnationSubcommands = append(incarnationSubcommands, newIncarnationDriftCmd, newIncarnationTriggersCmd)
}

func getDrift(ctx context.Context, cl *apiclient.Client, name string) (raw[apitypes.Drift], error) {
	return call[apitypes.Drift](ctx, cl, http.MethodGet, incPath(name, "drift"), nil, nil)
}

// newIncarnationDriftCmd is `soulctl incarnation drift` (SPEC §8.9).
func newIncarnationDriftCmd(g *Globals) *cobra.Command {
	var (
		name, scenario   string
		last, unschedule bool
		every            time.Duration
		ff               followFlags
	)
	c := &cobra.Command{
		Use:   "drift [name] [--scenario S] [--wait|--watch] | --last | --schedule DURATION | --unschedule",
		Short: "Check whether the hosts drifted from what the incarnation's scenario makes them",
		Long: `Runs a scenario (default create) in check mode with the committed input
(for each input the scenario declares, the committed state's value of that
name, else the creation input) and reports drift: per host, the tasks that would change,
with their diffs; a host that does not answer is unknown (neither drifted
nor clean). It changes no host and no state and never locks the
incarnation. Without --wait or --watch it prints the check's apply_id;
with them it prints the report when the check ended. --last prints the last
report without checking; --schedule 6h checks periodically (on the leader
Keeper; --scenario picks the scenario), --unschedule stops that.`,
		Example: `  soulctl incarnation drift hello-dev --watch
  soulctl incarnation drift hello-dev --last -o json
  soulctl incarnation drift hello-dev --schedule 6h`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var d raw[apitypes.Drift]
			switch {
			case every != 0:
				d, err = call[apitypes.Drift](ctx, cl, http.MethodPut, incPath(n, "drift", "schedule"), nil,
					apitypes.DriftSchedule{Scenario: scenario, Every: apitypes.Duration(every)})
			case unschedule:
				d, err = call[apitypes.Drift](ctx, cl, http.MethodDelete, incPath(n, "drift", "schedule"), nil, nil)
			case last:
				d, err = getDrift(ctx, cl, n)
			default:
				return g.checkDrift(cmd, cl, n, scenario, ff)
			}
			if err != nil {
				return err
			}
			return g.Emit(cmd, d.JSON, func(w io.Writer) error { return driftDetail(w, d.View) })
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	c.Flags().StringVar(&scenario, "scenario", "", "the scenario to check (default create)")
	c.Flags().BoolVar(&last, "last", false, "print the last drift report, check nothing")
	c.Flags().DurationVar(&every, "schedule", 0, "check drift periodically, at this interval (at least 1m)")
	c.Flags().BoolVar(&unschedule, "unschedule", false, "stop checking drift periodically")
	ff.register(c)
	c.MarkFlagsMutuallyExclusive("last", "schedule", "unschedule", "wait")
	c.MarkFlagsMutuallyExclusive("last", "schedule", "unschedule", "watch")
	return c
}

// checkDrift starts a drift check and, with --wait or --watch, prints its
// report when it ended.
func (g *Globals) checkDrift(cmd *cobra.Command, cl *apiclient.Client, name, scenario string, ff followFlags) error {
	ctx := cmd.Context()
	acc, err := call[accepted](ctx, cl, http.MethodPost, incPath(name, "drift"), nil, apitypes.DriftRequest{Scenario: scenario})
	if err != nil {
		return err
	}
	id := acc.View.ApplyID
	if !ff.any() {
		if ff.printID(g, cmd, id) {
			return nil
		}
		return g.Emit(cmd, acc.JSON, func(w io.Writer) error { return startedLines(w, "drift check of "+name, id) })
	}
	r, err := g.awaitRun(cmd, cl, id, ff.watch, ff.timeout)
	if err != nil {
		return err
	}
	d, err := getDrift(ctx, cl, name)
	if err != nil {
		return err
	}
	if d.View.Report == nil || d.View.Report.RunID != id {
		return cmdutil.Failed(fmt.Errorf("drift check %s %s without a report: %s", id, r.View.Status, r.View.Error))
	}
	if ff.printID(g, cmd, id) {
		return nil
	}
	return g.Emit(cmd, d.JSON, func(w io.Writer) error { return driftDetail(w, d.View) })
}

// driftDetail is the table form of a drift record: the schedule, the last
// report's verdict, a line per host and the diffs of drifted tasks.
func driftDetail(w io.Writer, d apitypes.Drift) error {
	row(w, "Incarnation:", d.Incarnation)
	if d.Schedule != nil {
		row(w, "Schedule:", fmt.Sprintf("every %s (scenario %s)", time.Duration(d.Schedule.Every), d.Schedule.Scenario))
	} else {
		row(w, "Schedule:", "none")
	}
	rep := d.Report
	if rep == nil {
		row(w, "Drift:", "never checked")
		return nil
	}
	row(w, "Checked:", fmt.Sprintf("%s, run %s, scenario %s", stamp(rep.CheckedAt), rep.RunID, rep.Scenario))
	verdict := "no"
	if rep.Drifted {
		verdict = fmt.Sprintf("yes (%d task(s) would change)", rep.Tasks)
	}
	row(w, "Drifted:", verdict)
	if rep.Error != "" {
		row(w, "Error:", rep.Error)
	}
	fmt.Fprintln(w)
	row(w, "HOST", "DRIFT", "TASKS")
	sids := make([]string, 0, len(rep.Hosts))
	for sid := range rep.Hosts {
		sids = append(sids, sid)
	}
	slices.Sort(sids)
	var diffs []string
	for _, sid := range sids {
		h := rep.Hosts[sid]
		var names []string
		for _, t := range h.Tasks {
			names = append(names, t.Task)
			text := fmt.Sprintf("--- %s: %s", sid, t.Task)
			if t.Diff != "" {
				text += "\n" + strings.Trim(t.Diff, "\n")
			} else if t.Msg != "" {
				text += "\n" + t.Msg
			}
			diffs = append(diffs, text)
		}
		tasks := strings.Join(names, ", ")
		if h.Status == apitypes.DriftUnknown && h.Msg != "" {
			tasks = h.Msg
		}
		if tasks == "" {
			tasks = "-"
		}
		row(w, sid, h.Status, clip(tasks, 80))
	}
	if len(diffs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, strings.Join(diffs, "\n"))
	}
	return nil
}

// newIncarnationTriggersCmd is `soulctl incarnation triggers` (SPEC §8.3).
func newIncarnationTriggersCmd(g *Globals) *cobra.Command {
	var name, scenario string
	c := &cobra.Command{
		Use:   "triggers [name] [--scenario S]",
		Short: "List the handlers owed to hosts (pending onchanges triggers)",
		Long: `A task reported changed on a host, but the run failed before a task that
onchanges: it could run there: the handler is owed to the host. The next
run of that scenario fires it there even if nothing changes then, and the
trigger is cleared once the handler succeeded.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			q := url.Values{}
			if scenario != "" {
				q.Set("scenario", scenario)
			}
			ts, err := call[[]apitypes.Trigger](cmd.Context(), cl, http.MethodGet, incPath(n, "triggers"), q, nil)
			if err != nil {
				return err
			}
			return g.Emit(cmd, ts.JSON, func(w io.Writer) error {
				row(w, "SCENARIO", "HANDLER", "HOST", "OWED SINCE RUN", "SINCE")
				for _, t := range ts.View {
					row(w, t.Scenario, t.Task, t.SID, t.RunID, ago(t.CreatedAt))
				}
				return nil
			})
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	c.Flags().StringVar(&scenario, "scenario", "", "only the triggers of this scenario")
	return c
}
