package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// newTaskCmd is `soulctl checker task`: executions of procedures.
func newTaskCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "task",
		Aliases: []string{"tasks"},
		Short:   "List Checker tasks and show their step logs",
	}
	c.AddCommand(newTaskListCmd(g), newTaskShowCmd(g), newTaskCancelCmd(g))
	return c
}

func newTaskListCmd(g *Globals) *cobra.Command {
	var procedure string
	var limit int
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List tasks, newest first",
		Example: `  soulctl checker task list
  soulctl checker task list --procedure fence_node --limit 20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(limit, maxCheckerTaskLimit, true); err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			ts, err := cl.ListCheckerTasks(cmd.Context(), procedure, limit)
			if err != nil {
				return err
			}
			if ts == nil {
				ts = []apitypes.CheckerTask{}
			}
			return g.Emit(cmd, ts, func(w io.Writer) error { return taskTable(w, ts) })
		},
	}
	c.Flags().StringVar(&procedure, "procedure", "", "only tasks of this procedure")
	c.Flags().IntVar(&limit, "limit", 0, "at most this many (the Keeper's default: 100)")
	return c
}

// taskTable renders tasks one per row.
func taskTable(w io.Writer, ts []apitypes.CheckerTask) error {
	row(w, "TASK", "PROCEDURE", "STATUS", "CREATED", "ERROR")
	for _, t := range ts {
		row(w, t.ID, t.Procedure, t.Status, ago(t.CreatedAt), dash(firstLine(t.RunError)))
	}
	return nil
}

func newTaskShowCmd(g *Globals) *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:   "show [id]",
		Short: "Show a task and its step log",
		Example: `  soulctl checker task show 3f1c…
  soulctl checker task show --uuid 3f1c… -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, id, "uuid")
			if err != nil {
				return err
			}
			t, err := cl.GetCheckerTask(cmd.Context(), n)
			if err != nil {
				return err
			}
			return g.Emit(cmd, t, func(w io.Writer) error { return taskDetail(w, t) })
		},
	}
	addNameFlag(c, &id, "uuid", "task id")
	return c
}

// taskDetail prints a task's fields, then its step log one line per entry
// (time, step, kind, message; continuation lines indented).
func taskDetail(w io.Writer, t apitypes.CheckerTask) error {
	row(w, "Task:", t.ID)
	row(w, "Procedure:", t.Procedure)
	row(w, "Status:", t.Status)
	if t.RunError != "" {
		row(w, "Error:", indentRest(t.RunError))
	}
	if t.Message != "" {
		row(w, "Message:", indentRest(t.Message))
	}
	row(w, "Vars:", compactJSON(t.Vars))
	if t.ParentID != "" {
		row(w, "Parent:", t.ParentID)
	}
	if t.ScheduleID != "" {
		row(w, "Schedule:", t.ScheduleID)
	}
	row(w, "Created:", stamp(t.CreatedAt))
	row(w, "Started:", stampPtr(t.StartedAt))
	fin := stampPtr(t.FinishedAt)
	if t.StartedAt != nil && t.FinishedAt != nil {
		fin += ", took " + human(t.FinishedAt.Sub(*t.StartedAt))
	}
	row(w, "Finished:", fin)
	if len(t.Log) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nStep log:")
	for _, l := range t.Log {
		lines := strings.Split(l.Message, "\n")
		row(w, "  "+l.Time.Local().Format("15:04:05"), dash(l.Step), l.Kind, lines[0])
		for _, more := range lines[1:] {
			row(w, "", "", "", more)
		}
	}
	return nil
}

// indentRest keeps a multi-line value readable under its label.
func indentRest(s string) string {
	return strings.ReplaceAll(s, "\n", "\n\t")
}

func newTaskCancelCmd(g *Globals) *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:   "cancel [id]",
		Short: "Cancel a running task; it ends CANCELLED",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, id, "uuid")
			if err != nil {
				return err
			}
			if err := cl.CancelCheckerTask(cmd.Context(), n); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]any{"cancelled": n}, func(w io.Writer) error {
				row(w, "cancelling task", n)
				return nil
			})
		},
	}
	addNameFlag(c, &id, "uuid", "task id")
	return c
}

// newScheduleCmd is `soulctl checker procedure schedule`.
func newScheduleCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "schedule",
		Aliases: []string{"schedules"},
		Short:   "Run procedures on cron schedules (on the leader Keeper)",
	}
	c.AddCommand(newScheduleAddCmd(g), newScheduleListCmd(g), newScheduleDelCmd(g))
	return c
}

func newScheduleAddCmd(g *Globals) *cobra.Command {
	var req apitypes.CreateScheduleRequest
	var vars string
	c := &cobra.Command{
		Use:   "add [name] --cron EXPR [--vars JSON]",
		Short: "Schedule a procedure",
		Long: `Schedules a procedure on a standard 5-field cron expression (or @hourly,
@every 10m, …). The leader Keeper starts each tick once; ticks missed while
no Keeper led are not replayed.`,
		Example: `  soulctl checker procedure schedule add --name vm_monitoring --vars '{"vcl": "production-vdc", "vmname": "web-server-01", "state": "reboot"}' --cron "*/5 * * * *"`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := nameArg(args, req.Procedure, "name")
			if err != nil {
				return err
			}
			req.Procedure = n
			if req.Vars, err = jsonObject(g, "vars", vars); err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			sc, err := cl.CreateSchedule(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.Emit(cmd, sc, func(w io.Writer) error { return scheduleTable(w, []apitypes.Schedule{sc}) })
		},
	}
	addNameFlag(c, &req.Procedure, "name", "procedure name")
	c.Flags().StringVar(&vars, "vars", "", "launch values of public vars: a JSON object, or @file")
	c.Flags().StringVar(&req.Cron, "cron", "", `cron expression, e.g. "*/5 * * * *" (required)`)
	_ = c.MarkFlagRequired("cron")
	return c
}

func newScheduleListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List schedules",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			ss, err := cl.ListSchedules(cmd.Context())
			if err != nil {
				return err
			}
			if ss == nil {
				ss = []apitypes.Schedule{}
			}
			return g.Emit(cmd, ss, func(w io.Writer) error { return scheduleTable(w, ss) })
		},
	}
}

func scheduleTable(w io.Writer, ss []apitypes.Schedule) error {
	row(w, "ID", "PROCEDURE", "CRON", "VARS", "OWNER", "STATE", "CREATED")
	for _, s := range ss {
		owner, state := dash(s.Owner), "active"
		if s.Paused {
			state = "paused: " + s.PauseReason
		}
		row(w, s.ID, s.Procedure, s.Cron, compactJSON(s.Vars), owner, state, ago(s.CreatedAt))
	}
	return nil
}

func newScheduleDelCmd(g *Globals) *cobra.Command {
	var id string
	c := &cobra.Command{
		Use:     "del [id]",
		Aliases: []string{"delete", "rm"},
		Short:   "Delete a schedule",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, id, "id")
			if err != nil {
				return err
			}
			if err := cl.DeleteSchedule(cmd.Context(), n); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]any{"deleted": n}, func(w io.Writer) error {
				row(w, "deleted schedule", n)
				return nil
			})
		},
	}
	addNameFlag(c, &id, "id", "schedule id")
	return c
}
