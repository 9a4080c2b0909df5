package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apitypes"
)

func init() { subcommands = append(subcommands, newServiceCmd) }

// newServiceCmd is `soulctl service`: the catalog of service repositories.
func newServiceCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "service",
		Aliases: []string{"services", "svc"},
		Short:   "Register and inspect services (git repositories at a ref)",
	}
	c.AddCommand(newServiceRegisterCmd(g), newServiceListCmd(g),
		withNames(g, newServiceShowCmd(g), kindService, "name"),
		withNames(g, newServiceUpdateCmd(g), kindService, "name"),
		withNames(g, newServiceDeleteCmd(g), kindService, "name"))
	return c
}

func newServiceRegisterCmd(g *Globals) *cobra.Command {
	var req apitypes.RegisterServiceRequest
	c := &cobra.Command{
		Use:   "register [name] --git URL --ref REF",
		Short: "Register a service from a git repository at a ref",
		Long: `Registers a service: the Keeper resolves the ref to a commit, materializes the
repository and validates it fail-closed. An invalid repository is refused
with its problems as file:line:col lines (exit 2).`,
		Example: `  soulctl service register --name my-service --git https://git.example.com/svc/my-service.git --ref v1.0.0
  soulctl service register hello --git file:///srv/git/hello --ref main`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(args, req.Name, "name")
			if err != nil {
				return err
			}
			req.Name = name
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			svc, err := cl.RegisterService(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.Emit(cmd, svc, func(w io.Writer) error { return serviceDetail(w, svc) })
		},
	}
	addNameFlag(c, &req.Name, "name", "service name")
	c.Flags().StringVar(&req.Git, "git", "", "git URL: https://, ssh://, file:// or a local path (required)")
	c.Flags().StringVar(&req.Ref, "ref", "main", "git ref: tag or branch")
	_ = c.MarkFlagRequired("git")
	return c
}

func newServiceListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List registered services",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			svcs, err := cl.ListServices(cmd.Context())
			if err != nil {
				return err
			}
			if svcs == nil {
				svcs = []apitypes.Service{}
			}
			return g.Emit(cmd, svcs, func(w io.Writer) error {
				row(w, "NAME", "REF", "COMMIT", "GIT", "UPDATED")
				for _, s := range svcs {
					row(w, s.Name, s.Ref, short(s.Commit), s.Git, ago(s.UpdatedAt))
				}
				return nil
			})
		},
	}
}

func newServiceShowCmd(g *Globals) *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:   "show [name]",
		Short: "Show one service",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			svc, err := cl.GetService(cmd.Context(), n)
			if err != nil {
				return err
			}
			return g.Emit(cmd, svc, func(w io.Writer) error {
				if err := serviceDetail(w, svc); err != nil {
					return err
				}
				// The commits the service's incarnations actually run
				// (audit M3): an upgrade may pin another ref than the
				// service's.
				incs, err := cl.ListIncarnations(cmd.Context())
				if err != nil {
					return err
				}
				return servicePins(w, svc, incs)
			})
		},
	}
	addNameFlag(c, &name, "name", "service name")
	return c
}

func newServiceUpdateCmd(g *Globals) *cobra.Command {
	var (
		name string
		req  apitypes.UpdateServiceRequest
	)
	c := &cobra.Command{
		Use:   "update [name] --ref REF",
		Short: "Move a service to a new ref (incarnations move with `incarnation upgrade`)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			svc, err := cl.UpdateService(cmd.Context(), n, req)
			if err != nil {
				return err
			}
			return g.Emit(cmd, svc, func(w io.Writer) error { return serviceDetail(w, svc) })
		},
	}
	addNameFlag(c, &name, "name", "service name")
	c.Flags().StringVar(&req.Ref, "ref", "", "new git ref (required)")
	c.Flags().StringVar(&req.Git, "git", "", "new git URL")
	_ = c.MarkFlagRequired("ref")
	return c
}

func newServiceDeleteCmd(g *Globals) *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:     "delete [name]",
		Aliases: []string{"rm"},
		Short:   "Remove a service no incarnation uses",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			if err := cl.DeleteService(cmd.Context(), n); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]any{"name": n, "deleted": true}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "service %s deleted\n", n)
				return err
			})
		},
	}
	addNameFlag(c, &name, "name", "service name")
	return c
}

// serviceDetail is the table form of one service.
func serviceDetail(w io.Writer, s apitypes.Service) error {
	row(w, "Name:", s.Name)
	if d := strings.Join(strings.Fields(s.Description), " "); d != "" {
		row(w, "Description:", d)
	}
	row(w, "Git:", s.Git)
	row(w, "Ref:", s.Ref)
	row(w, "Commit:", s.Commit)
	row(w, "Registered:", stamp(s.CreatedAt))
	row(w, "Updated:", stamp(s.UpdatedAt))
	for _, p := range s.Warnings {
		row(w, "Warning:", warningText(p))
	}
	return nil
}

// warningText renders a validation warning as `scenario validate` does:
// file:line:col: warning: message.
func warningText(p apitypes.Problem) string {
	pos := p.File
	if p.Line > 0 {
		pos += fmt.Sprintf(":%d:%d", p.Line, p.Col)
	}
	return pos + ": warning: " + p.Message
}

// servicePins lists the incarnations of svc with the ref and commit each
// is pinned to, marking those not at the service's commit.
func servicePins(w io.Writer, svc apitypes.Service, incs []apitypes.Incarnation) error {
	var mine []apitypes.Incarnation
	for _, i := range incs {
		if i.Service == svc.Name {
			mine = append(mine, i)
		}
	}
	if len(mine) == 0 {
		row(w, "Incarnations:", "none")
		return nil
	}
	fmt.Fprintln(w, "Incarnations (pinned commits):")
	for _, i := range mine {
		note := ""
		if i.Commit != svc.Commit {
			note = "  (not the service's commit)"
		}
		fmt.Fprintf(w, "  %s  %s  %s%s\n", i.Name, dash(i.Ref), i.Commit, note)
	}
	return nil
}

// short is the first 12 characters of a commit.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return dash(commit)
}
