package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newIncarnationCmd) }

// incarnationSubcommands are the verbs of `soulctl incarnation`, each file
// appending its own.
var incarnationSubcommands []func(*Globals) *cobra.Command

func init() {
	incarnationSubcommands = append(incarnationSubcommands,
		newIncarnationCreateCmd, newIncarnationListCmd, newIncarnationShowCmd, newIncarnationHistoryCmd,
		newIncarnationUnlockCmd, newIncarnationDeleteCmd, newIncarnationMembersCmd)
}

// newIncarnationCmd is `soulctl incarnation`: deployments of services.
func newIncarnationCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "incarnation",
		Aliases: []string{"incarnations", "inc"},
		Short:   "Create incarnations of services, run their scenarios, read their state and history",
	}
	for _, sub := range incarnationSubcommands {
		sc := sub(g)
		if sc.Name() != "create" && sc.Name() != "list" && sc.Name() != "members" {
			withNames(g, sc, kindIncarnation, "name")
		}
		c.AddCommand(sc)
	}
	return c
}

func newIncarnationCreateCmd(g *Globals) *cobra.Command {
	var (
		req            apitypes.CreateIncarnationRequest
		covens         []string
		input, essence string
		ff             followFlags
	)
	c := &cobra.Command{
		Use:   "create [name] --service S --covens a,b [--input JSON] [--essence JSON] [--wait|--watch]",
		Short: "Create an incarnation on the souls of some covens (runs scenario create)",
		Long: `Creates an incarnation of a service: its members are the souls carrying all
the given covens, and scenario create runs on them. --input and --essence
take a JSON object or @file. With --wait (or --watch, which shows progress)
soulctl waits for the run and prints the incarnation with its committed
state; it exits 1 if the run did not succeed.`,
		Example: `  soulctl incarnation create --name my-service-prod --service my-service --covens prod \
    --input '{"banner_text": "Managed by Soul Stack — prod"}' --watch`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(args, req.Name, "name")
			if err != nil {
				return err
			}
			req.Name, req.Covens = name, covensFlag(covens)
			if req.Input, err = jsonObject(g, "input", input); err != nil {
				return err
			}
			if req.Essence, err = jsonObject(g, "essence", essence); err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			acc, err := createIncarnation(cmd.Context(), cl, req)
			if err != nil {
				return err
			}
			if !ff.any() {
				if ff.printID(g, cmd, acc.View.ApplyID) {
					return nil
				}
				return g.Emit(cmd, acc.JSON, func(w io.Writer) error {
					return startedLines(w, "incarnation "+name+" created", acc.View.ApplyID)
				})
			}
			r, err := g.awaitRun(cmd, cl, acc.View.ApplyID, ff.watch, ff.timeout)
			if err != nil {
				return err
			}
			if ff.printID(g, cmd, acc.View.ApplyID) {
				return runOutcome(r.View)
			}
			inc, err := getIncarnation(cmd.Context(), cl, name)
			if err != nil {
				return err
			}
			if err := g.Emit(cmd, inc.JSON, func(w io.Writer) error { return incarnationDetail(w, inc.View) }); err != nil {
				return err
			}
			return runOutcome(r.View)
		},
	}
	addNameFlag(c, &req.Name, "name", "incarnation name")
	c.Flags().StringVar(&req.Service, "service", "", "registered service (required)")
	c.Flags().StringSliceVar(&covens, "covens", nil, "covens selecting the member souls (comma-separated; all must match)")
	c.Flags().StringVar(&input, "input", "", "input of scenario create: JSON object or @file")
	c.Flags().StringVar(&essence, "essence", "", "essence overrides: JSON object or @file")
	ff.register(c)
	_ = c.MarkFlagRequired("service")
	completeFlag(g, c, "service", kindService)
	return c
}

func newIncarnationListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List incarnations",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			incs, err := listIncarnations(cmd.Context(), cl)
			if err != nil {
				return err
			}
			return g.Emit(cmd, incs.JSON, func(w io.Writer) error {
				row(w, "NAME", "SERVICE", "REF", "STATUS", "MEMBERS", "COVENS", "UPDATED")
				for _, i := range incs.View {
					row(w, i.Name, i.Service, dash(i.Ref), i.Status, fmt.Sprint(len(i.Members)), list(i.Covens), ago(i.UpdatedAt))
				}
				return nil
			})
		},
	}
}

func newIncarnationShowCmd(g *Globals) *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:   "show [name]",
		Short: "Show an incarnation: status, members, committed state",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			inc, err := getIncarnation(cmd.Context(), cl, n)
			if err != nil {
				return err
			}
			return g.Emit(cmd, inc.JSON, func(w io.Writer) error { return incarnationDetail(w, inc.View) })
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	return c
}

func newIncarnationHistoryCmd(g *Globals) *cobra.Command {
	var (
		name  string
		limit int
	)
	c := &cobra.Command{
		Use:   "history [name] [--limit N]",
		Short: "Show the committed states of an incarnation, newest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := nameArg(args, name, "name")
			if err != nil {
				return err
			}
			if err := checkLimit(limit, maxListLimit, false); err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			h, err := incarnationHistory(cmd.Context(), cl, n, limit)
			if err != nil {
				return err
			}
			return g.Emit(cmd, h.JSON, func(w io.Writer) error {
				row(w, "WHEN", "APPLY_ID", "SCENARIO", "HOSTS", "STATE")
				for _, s := range h.View {
					sc := s.Scenario
					if s.ResumedFrom != "" {
						sc += " (resumes " + s.ResumedFrom + ")"
					}
					row(w, s.CreatedAt.Local().Format("2006-01-02 15:04:05"), s.RunID, sc, snapshotHosts(s.Summary), clip(compactJSON(s.State), 60))
				}
				return nil
			})
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	c.Flags().IntVar(&limit, "limit", 20, "at most this many snapshots")
	return c
}

func newIncarnationUnlockCmd(g *Globals) *cobra.Command {
	var name, reason string
	c := &cobra.Command{
		Use:   "unlock [name] --reason TEXT",
		Short: "Unlock an error_locked incarnation (audited with the reason)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := nameArg(args, name, "name")
			if err != nil {
				return err
			}
			if strings.TrimSpace(reason) == "" {
				return cmdutil.Usage(errors.New("--reason is required: say why the hosts are fine now"))
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			inc, err := unlockIncarnation(cmd.Context(), cl, n, reason)
			if err != nil {
				return err
			}
			return g.Emit(cmd, inc.JSON, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "incarnation %s unlocked: status %s\n", n, dash(inc.View.Status))
				return err
			})
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	c.Flags().StringVar(&reason, "reason", "", "why it is safe to unlock (required, audited)")
	return c
}

func newIncarnationDeleteCmd(g *Globals) *cobra.Command {
	var (
		name    string
		destroy bool
	)
	c := &cobra.Command{
		Use:     "delete [name] [--destroy]",
		Aliases: []string{"rm"},
		Short:   "Delete an incarnation's record (hosts are left as they are; --destroy deletes its cloud instances)",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			if _, err := deleteIncarnation(cmd.Context(), cl, n, destroy); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]any{"name": n, "deleted": true}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "incarnation %s deleted\n", n)
				return err
			})
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	c.Flags().BoolVar(&destroy, "destroy", false, "delete the incarnation's cloud instances too (refused without it when it has some)")
	return c
}

// newIncarnationMembersCmd is `incarnation members add|remove`.
func newIncarnationMembersCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "members",
		Short: "Add souls to an incarnation or remove them",
	}
	for _, v := range []struct{ use, method, short string }{
		{"add", http.MethodPost, "Add souls (by SID) to an incarnation's members"},
		{"remove", http.MethodDelete, "Remove souls (by SID) from an incarnation's members"},
	} {
		var (
			name string
			sids []string
		)
		sub := &cobra.Command{
			Use:   v.use + " [name] --sid a,b",
			Short: v.short,
			Args:  cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				n, err := nameArg(args, name, "name")
				if err != nil {
					return err
				}
				ids := covensFlag(sids)
				if len(ids) == 0 {
					return cmdutil.Usage(errors.New("--sid is required"))
				}
				cl, err := g.Client(cmd.Context())
				if err != nil {
					return err
				}
				inc, err := changeMembers(cmd.Context(), cl, v.method, n, ids)
				if err != nil {
					return err
				}
				return g.Emit(cmd, inc.JSON, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "incarnation %s members: %s\n", n, list(inc.View.Members))
					return err
				})
			},
		}
		addNameFlag(sub, &name, "name", "incarnation name")
		sub.Flags().StringSliceVar(&sids, "sid", nil, "soul SIDs (comma-separated or repeated)")
		withNames(g, sub, kindIncarnation, "name")
		completeFlag(g, sub, "sid", kindSoul)
		c.AddCommand(sub)
	}
	return c
}

// incarnationDetail is the table form of one incarnation.
func incarnationDetail(w io.Writer, i incarnationView) error {
	row(w, "Name:", i.Name)
	svc := i.Service
	if i.Ref != "" {
		svc += " @ " + i.Ref
	}
	if i.Commit != "" {
		svc += " (commit " + short(i.Commit) + ")"
	}
	row(w, "Service:", svc)
	if i.Commit != "" {
		row(w, "Pinned commit:", i.Commit) // what runs, whatever the service's ref says (audit M3)
	}
	row(w, "Status:", i.Status)
	if i.LockReason != "" {
		row(w, "Locked because:", i.LockReason)
	}
	if i.ActiveRun != "" {
		row(w, "Active run:", i.ActiveRun)
	}
	row(w, "Covens:", list(i.Covens))
	row(w, "Members:", fmt.Sprintf("%s (%d)", strings.Join(i.Members, ", "), len(i.Members)))
	row(w, "Created:", stamp(i.CreatedAt))
	row(w, "Updated:", stamp(i.UpdatedAt))
	fmt.Fprintln(w, "State:")
	return writeMapYAML(w, "  ", i.State)
}

// snapshotHosts summarizes a history entry's outcome counts (hosts,
// hosts_changed, hosts_failed): "3 hosts, 2 changed" — how many hosts took
// part and on how many something changed.
func snapshotHosts(summary map[string]any) string {
	count := func(k string) int { f, _ := summary[k].(float64); return int(f) }
	if count("hosts") == 0 {
		return "-"
	}
	s := fmt.Sprintf("%s, %d changed", countOf(count("hosts"), "host"), count("hosts_changed"))
	if n := count("hosts_failed"); n > 0 {
		s += fmt.Sprintf(", %d failed", n)
	}
	return s
}
