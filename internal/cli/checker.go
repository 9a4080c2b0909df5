package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newCheckerCmd) }

// newCheckerCmd is `soulctl checker`: procedures, their tasks and
// schedules (SPEC §13).
func newCheckerCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "checker",
		Short: "Checker procedures (runbooks), their tasks and schedules",
	}
	proc := &cobra.Command{
		Use:     "procedure",
		Aliases: []string{"procedures", "proc"},
		Short:   "Create, inspect, execute, delete and schedule procedures",
	}
	proc.AddCommand(newProcedureCreateCmd(g), newProcedureListCmd(g), newProcedureShowCmd(g),
		newProcedureExecuteCmd(g), newProcedureDeleteCmd(g), newScheduleCmd(g))
	c.AddCommand(proc, newTaskCmd(g))
	return c
}

func newProcedureCreateCmd(g *Globals) *cobra.Command {
	var name, file string
	c := &cobra.Command{
		Use:     "create [name] --file procedure.yaml",
		Aliases: []string{"put", "update"},
		Short:   "Create or replace a procedure from its YAML",
		Long: `Stores a procedure. The Keeper validates it fail-closed and refuses an
invalid one with its problems as name:line:col lines (exit 2).`,
		Example: `  soulctl checker procedure create vm_monitoring --file vm_monitoring.yaml
  cat fence_node.yaml | soulctl checker procedure create --name fence_node --file -`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := nameArg(args, name, "name")
			if err != nil {
				return err
			}
			src, err := readSource(g, file)
			if err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			p, err := cl.PutProcedure(cmd.Context(), n, src)
			if err != nil {
				return err
			}
			return g.Emit(cmd, p, func(w io.Writer) error {
				row(w, "Procedure:", p.Name)
				row(w, "Updated:", stamp(p.UpdatedAt))
				return nil
			})
		},
	}
	addNameFlag(c, &name, "name", "procedure name")
	c.Flags().StringVarP(&file, "file", "f", "", "the procedure's YAML file, - for stdin (required)")
	_ = c.MarkFlagRequired("file")
	return c
}

// readSource reads a --file value ("-" is stdin).
func readSource(g *Globals, file string) (string, error) {
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(g.stdin())
	} else {
		b, err = g.readLocalFile("--file", file)
	}
	if err != nil {
		return "", cmdutil.Usage(fmt.Errorf("--file %s: %w", file, err))
	}
	return string(b), nil
}

func newProcedureListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List procedures",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			ps, err := cl.ListProcedures(cmd.Context())
			if err != nil {
				return err
			}
			if ps == nil {
				ps = []apitypes.Procedure{}
			}
			return g.Emit(cmd, ps, func(w io.Writer) error {
				row(w, "NAME", "UPDATED")
				for _, p := range ps {
					row(w, p.Name, ago(p.UpdatedAt))
				}
				return nil
			})
		},
	}
}

func newProcedureShowCmd(g *Globals) *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:   "show [name]",
		Short: "Print a procedure's YAML",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			p, err := cl.GetProcedure(cmd.Context(), n)
			if err != nil {
				return err
			}
			return g.Emit(cmd, p, func(w io.Writer) error {
				_, err := io.WriteString(w, p.Source)
				return err
			})
		},
	}
	addNameFlag(c, &name, "name", "procedure name")
	return c
}

func newProcedureDeleteCmd(g *Globals) *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:     "delete [name]",
		Aliases: []string{"rm"},
		Short:   "Delete a procedure no schedule uses",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			if err := cl.DeleteProcedure(cmd.Context(), n); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]any{"deleted": n}, func(w io.Writer) error {
				row(w, "deleted procedure", n)
				return nil
			})
		},
	}
	addNameFlag(c, &name, "name", "procedure name")
	return c
}

func newProcedureExecuteCmd(g *Globals) *cobra.Command {
	var name, vars, jsonOut string
	var wait bool
	c := &cobra.Command{
		Use:     "execute [name] [--vars JSON] [--json yes]",
		Aliases: []string{"exec", "run"},
		Short:   "Start a procedure",
		Long: `Starts a procedure's task and prints its id. A var declared scalar given an
array fans out: one task per element, run in parallel. --json yes prints
the list of task ids as JSON (what a procedure's apicall pushes into @deps).
--wait follows the tasks to their end and exits 1 unless all succeeded.`,
		Example: `  soulctl checker procedure execute --name vm_monitoring --vars '{"vcl": "production-vdc", "vmname": "web-server-01", "state": "reboot"}'
  soulctl checker procedure execute --name fence_node --vars '{"node": ["n1", "n2"], "exclude_current_node": false}' --json yes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := nameArg(args, name, "name")
			if err != nil {
				return err
			}
			vm, err := jsonObject(g, "vars", vars)
			if err != nil {
				return err
			}
			asJSON, err := yesNo("json", jsonOut)
			if err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			res, err := cl.ExecuteProcedure(cmd.Context(), n, vm)
			if err != nil {
				return err
			}
			tasks := res.Tasks
			if wait {
				if tasks, err = waitTasks(cmd.Context(), g, res.TaskIDs); err != nil {
					return err
				}
			}
			if asJSON {
				if g.capture {
					return g.Emit(cmd, res.TaskIDs, nil)
				}
				if err := writeJSON(cmd.OutOrStdout(), res.TaskIDs); err != nil {
					return err
				}
			} else if err := g.Emit(cmd, tasks, func(w io.Writer) error { return taskTable(w, tasks) }); err != nil {
				return err
			}
			for _, t := range tasks {
				if wait && t.Status != "SUCCESS" {
					return cmdutil.Failed(fmt.Errorf("task %s of %s ended %s: %s", t.ID, t.Procedure, t.Status, t.RunError))
				}
			}
			return nil
		},
	}
	addNameFlag(c, &name, "name", "procedure name")
	c.Flags().StringVar(&vars, "vars", "", "launch values of public vars: a JSON object, or @file")
	c.Flags().StringVar(&jsonOut, "json", "no", "yes: print the task ids as a JSON list")
	c.Flags().BoolVar(&wait, "wait", false, "wait for the tasks to end; exit 1 unless all succeeded")
	return c
}

// yesNo parses a yes/no flag value (also true/false).
func yesNo(flag, v string) (bool, error) {
	switch v {
	case "yes", "true":
		return true, nil
	case "no", "false", "":
		return false, nil
	}
	return false, cmdutil.Usage(fmt.Errorf("--%s takes yes or no, not %q", flag, v))
}

// waitTasks polls the tasks until every one has ended.
func waitTasks(ctx context.Context, g *Globals, ids []string) ([]apitypes.CheckerTask, error) {
	cl, err := g.Client(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]apitypes.CheckerTask, len(ids))
	for i, id := range ids {
		for {
			t, err := cl.GetCheckerTask(ctx, id)
			if err != nil {
				return nil, err
			}
			if t.Status != "PENDING" && t.Status != "RUNNING" {
				t.Log = nil
				out[i] = t
				break
			}
			select {
			case <-ctx.Done():
				return nil, errors.Join(ctx.Err(), fmt.Errorf("waiting for task %s", id))
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return out, nil
}
