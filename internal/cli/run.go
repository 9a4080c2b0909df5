package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/domain"
)

func init() { subcommands = append(subcommands, newRunCmd) }

// newRunCmd is `soulctl run`: one execution of a scenario.
func newRunCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "run",
		Aliases: []string{"runs"},
		Short:   "Show, watch, cancel and resume runs (by apply_id)",
	}
	c.AddCommand(newRunListCmd(g))
	for _, sub := range []*cobra.Command{newRunShowCmd(g), newRunWatchCmd(g), newRunCancelCmd(g), newRunResumeCmd(g)} {
		c.AddCommand(withNames(g, sub, kindRun, "id"))
	}
	return c
}

func newRunListCmd(g *Globals) *cobra.Command {
	var (
		inc   string
		limit int
	)
	c := &cobra.Command{
		Use:     "list [--incarnation NAME] [--limit N]",
		Aliases: []string{"ls"},
		Short:   "List runs, newest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(limit, maxListLimit, false); err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			runs, err := listRuns(cmd.Context(), cl, inc, limit)
			if err != nil {
				return err
			}
			return g.Emit(cmd, runs.JSON, func(w io.Writer) error {
				row(w, "APPLY_ID", "INCARNATION", "SCENARIO", "STATUS", "STARTED", "DURATION")
				for _, r := range runs.View {
					started := r.CreatedAt
					if r.StartedAt != nil {
						started = *r.StartedAt
					}
					dur := "-"
					if r.StartedAt != nil && r.FinishedAt != nil {
						dur = human(r.FinishedAt.Sub(*r.StartedAt))
					}
					sc := r.Scenario
					switch {
					case r.Drift:
						sc += " (drift check)"
					case r.Check:
						sc += " (check)"
					case r.ResumedFrom != "":
						sc += " (resume)"
					}
					row(w, r.ApplyID, r.Incarnation, sc, r.Status, ago(started), dur)
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&inc, "incarnation", "", "only runs of this incarnation")
	c.Flags().IntVar(&limit, "limit", 20, "at most this many runs")
	return c
}

func newRunShowCmd(g *Globals) *cobra.Command {
	var (
		id, after string
		limit     int
	)
	c := &cobra.Command{
		Use:   "show [apply-id] [--limit N] [--after SID]",
		Short: "Show a run: status, timings and every task's result on a page of hosts",
		Long: `Shows a run's header and a task × host table of one page of its hosts
(by SID: 100 hosts unless --limit says otherwise, at most 1000), each
task's totals over all hosts when there are more, and the output of the
failed hosts of the page. --after SID starts the page after that host;
the last line names the next page.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLimit(limit, maxRunHostsLimit, true); err != nil {
				return err
			}
			rid, cl, err := g.nameAndClient(cmd, args, id, "id")
			if err != nil {
				return err
			}
			r, err := getRunPage(cmd.Context(), cl, rid, after, limit)
			if err != nil {
				return err
			}
			return g.Emit(cmd, r.JSON, func(w io.Writer) error { return runDetail(w, r.View) })
		},
	}
	addNameFlag(c, &id, "id", "run apply_id")
	c.Flags().IntVar(&limit, "limit", 0, "hosts per page (default 100, at most 1000)")
	c.Flags().StringVar(&after, "after", "", "start the page after this host's SID")
	return c
}

func newRunWatchCmd(g *Globals) *cobra.Command {
	var id string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "watch [apply-id]",
		Short: "Follow a run live until it ends; exit 1 unless it succeeded",
		Long: `Shows the run's progress as it happens: a line per task with a per-host
summary (3/5 ok, 1 changed, 1 running), waves as they start, failed hosts
with their stderr, and a final summary. On a terminal the task in flight is
redrawn in place; otherwise (a pipe, a CI log) every line is final.
With -o json|yaml the progress goes to stderr and the final run to stdout.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rid, cl, err := g.nameAndClient(cmd, args, id, "id")
			if err != nil {
				return err
			}
			r, err := g.awaitRun(cmd, cl, rid, true, timeout)
			if err != nil {
				return err
			}
			if err := g.emitFollowed(cmd, r, true); err != nil {
				return err
			}
			return runOutcome(r.View)
		},
	}
	addNameFlag(c, &id, "id", "run apply_id")
	addTimeoutFlag(c, &timeout)
	return c
}

func newRunCancelCmd(g *Globals) *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:   "cancel [apply-id]",
		Short: "Cancel a run: no further task or wave starts",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rid, cl, err := g.nameAndClient(cmd, args, id, "id")
			if err != nil {
				return err
			}
			r, err := cancelRun(cmd.Context(), cl, rid)
			if err != nil {
				return err
			}
			return g.Emit(cmd, r.JSON, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "run %s: cancel requested\n", rid)
				return err
			})
		},
	}
	addNameFlag(c, &id, "id", "run apply_id")
	return c
}

// runDetail is the table form of a run: a header, a task × host table and
// the output of failed hosts.
func runDetail(w io.Writer, r runView) error {
	row(w, "Run:", r.ApplyID)
	row(w, "Incarnation:", r.Incarnation)
	row(w, "Scenario:", r.Scenario+checkTag(r.Check))
	row(w, "Status:", r.Status)
	if r.ResumedFrom != "" {
		row(w, "Resumed from:", r.ResumedFrom)
	}
	if r.Error != "" {
		row(w, "Error:", r.Error)
	}
	row(w, "Started:", stampPtr(r.StartedAt))
	row(w, "Finished:", stampPtr(r.FinishedAt))
	if r.StartedAt != nil {
		end := time.Now()
		if r.FinishedAt != nil {
			end = *r.FinishedAt
		}
		row(w, "Duration:", human(end.Sub(*r.StartedAt)))
	}
	if len(r.Tasks) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	row(w, "TASK", "HOST", "WAVE", "STATUS", "CHANGED", "RC", "DURATION")
	var failed, notes []string
	for _, t := range r.Tasks {
		name := t.Name
		if name == "" {
			name = t.Path
		}
		if len(t.Hosts) == 0 && t.Note != "" {
			// The step targeted no host: say so, and why, below.
			row(w, clip(name, 48), "-", "", "no host", "", "", "")
			notes = append(notes, name+": "+t.Note)
		}
		for i, h := range t.Hosts {
			label := name
			if i > 0 {
				label = `  "`
			}
			row(w, clip(label, 48), hostLabel(h), waveCell(h.Wave), h.Status, yn(h.Changed), fmt.Sprint(h.RC), human(time.Duration(h.DurationMS)*time.Millisecond))
			switch domain.HostStatus(h.Status) {
			case domain.StatusFailed, domain.StatusUnreachable:
				failed = append(failed, failureText(name, h))
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, strings.Join(notes, "\n"))
	}
	if len(failed) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, strings.Join(failed, "\n"))
	}
	return pageFooter(w, r)
}

// pageFooter says, for a run shown a page of hosts at a time, each task's
// totals over all hosts and how to read the next page.
func pageFooter(w io.Writer, r runView) error {
	shown := map[string]bool{}
	for _, t := range r.Tasks {
		for _, h := range t.Hosts {
			shown[h.SID] = true
		}
	}
	if r.Next == "" && len(shown) >= r.Hosts {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d of %d hosts shown. Totals over all hosts:\n", len(shown), r.Hosts)
	for _, t := range r.Tasks {
		if t.Counts == nil {
			continue
		}
		name := t.Name
		if name == "" {
			name = t.Path
		}
		var parts []string
		for _, st := range slices.Sorted(maps.Keys(t.Counts.Statuses)) {
			parts = append(parts, fmt.Sprintf("%d %s", t.Counts.Statuses[st], st))
		}
		fmt.Fprintf(w, "  %s: %d hosts, %s\n", clip(name, 48), t.Counts.Hosts, strings.Join(parts, ", "))
	}
	if r.Next != "" {
		fmt.Fprintf(w, "Next page: soulctl run show %s --after %s\n", r.ApplyID, r.Next)
	}
	return nil
}

// failureText is what a failed host said.
func failureText(task string, h hostView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s: %s", task, h.SID, h.Status)
	if h.RC != 0 {
		fmt.Fprintf(&b, " (rc %d)", h.RC)
	}
	if m := strings.TrimSpace(h.Msg); m != "" {
		b.WriteString(": " + firstLine(m))
	}
	for _, l := range tailLines(h.Stderr, 20) {
		b.WriteString("\n  | " + l)
	}
	return b.String()
}

func waveCell(w int) string {
	if w <= 0 {
		return "-"
	}
	return fmt.Sprint(w)
}

func yn(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
