package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
)

func init() {
	subcommands = append(subcommands, newTeamsCmd, newGrantsCmd, newRolesCmd, newAccessCmd)
}

// newTeamsCmd is `soulctl teams`: groups of Archons that grants are given
// to (docs/access.md).
func newTeamsCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "teams",
		Aliases: []string{"team"},
		Short:   "Create teams and manage their members (manage_access)",
		Long: `A team is a named group of Archons. A grant to a team (soulctl grants add
--team NAME) holds for every member. See docs/access.md.`,
	}
	list := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the teams and their members", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			ts, err := cl.ListTeams(cmd.Context())
			if err != nil {
				return err
			}
			if ts == nil {
				ts = []apitypes.Team{}
			}
			return g.Emit(cmd, ts, func(w io.Writer) error {
				row(w, "NAME", "MEMBERS", "DESCRIPTION")
				for _, t := range ts {
					row(w, t.Name, fmt.Sprint(len(t.Members)), dash(t.Description))
				}
				return nil
			})
		},
	}
	var desc string
	create := &cobra.Command{
		Use: "create NAME [--description TEXT]", Short: "Create a team", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			t, err := cl.CreateTeam(cmd.Context(), apitypes.CreateTeamRequest{Name: args[0], Description: desc})
			if err != nil {
				return err
			}
			return g.Emit(cmd, t, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "team %s created\n", t.Name)
				return err
			})
		},
	}
	create.Flags().StringVar(&desc, "description", "", "what the team is for")
	show := &cobra.Command{
		Use: "show NAME", Short: "Show a team's members and grants", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			t, err := cl.GetTeam(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			gs, err := cl.ListGrants(cmd.Context(), apiclient.GrantFilter{Team: args[0]})
			if err != nil {
				return err
			}
			v := struct {
				apitypes.Team
				Grants []apitypes.Grant `json:"grants"`
			}{t, nonNilGrants(gs)}
			return g.Emit(cmd, v, func(w io.Writer) error {
				row(w, "Team:", t.Name)
				row(w, "Members:", dash(strings.Join(t.Members, ", ")))
				for _, gr := range gs {
					row(w, "Grant:", gr.Role+" on "+gr.Scope+" ("+gr.ID+")")
				}
				return nil
			})
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a team, its memberships and every grant to it", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := cl.DeleteTeam(cmd.Context(), args[0]); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"deleted": args[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "team %s deleted\n", args[0])
				return err
			})
		},
	}
	add := &cobra.Command{
		Use: "add-member TEAM ARCHON", Short: "Add an Archon (id or name) to a team", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			t, err := cl.AddTeamMember(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return g.Emit(cmd, t, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s added to team %s\n", args[1], args[0])
				return err
			})
		},
	}
	rm := &cobra.Command{
		Use: "remove-member TEAM ARCHON", Short: "Remove an Archon (id or name) from a team", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := cl.RemoveTeamMember(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"removed": args[1], "team": args[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s removed from team %s\n", args[1], args[0])
				return err
			})
		},
	}
	c.AddCommand(list, create, show, del, add, rm)
	return c
}

func nonNilGrants(gs []apitypes.Grant) []apitypes.Grant {
	if gs == nil {
		return []apitypes.Grant{}
	}
	return gs
}

// newGrantsCmd is `soulctl grants`: roles given on scopes.
func newGrantsCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "grants",
		Aliases: []string{"grant"},
		Short:   "Give roles to Archons and teams on scopes, and revoke them (manage_access)",
		Long: `A grant gives an Archon or a team a role (admin, operator, auditor,
viewer or a custom role) on a scope: keeper (everything), service:NAME
(the service and all its incarnations), incarnation:NAME, or coven:NAME
(the souls carrying it). See docs/access.md.`,
	}
	var f apiclient.GrantFilter
	list := &cobra.Command{
		Use: "list [--archon A | --team T]", Aliases: []string{"ls"}, Short: "List grants", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			gs, err := cl.ListGrants(cmd.Context(), f)
			if err != nil {
				return err
			}
			gs = nonNilGrants(gs)
			return g.Emit(cmd, gs, func(w io.Writer) error {
				row(w, "ID", "SUBJECT", "ROLE", "SCOPE", "CREATED")
				for _, gr := range gs {
					row(w, gr.ID, gr.SubjectKind+" "+dash(gr.SubjectName), gr.Role, gr.Scope, ago(gr.CreatedAt))
				}
				return nil
			})
		},
	}
	list.Flags().StringVar(&f.Archon, "archon", "", "the grants this Archon holds (its teams' included)")
	list.Flags().StringVar(&f.Team, "team", "", "the grants of this team")
	var req apitypes.GrantRequest
	add := &cobra.Command{
		Use:   "add (--archon A | --team T) --role ROLE --scope SCOPE",
		Short: "Give a role on a scope",
		Example: `  soulctl grants add --team db --role operator --scope service:postgres
  soulctl grants add --team oncall --role oncall --scope keeper
  soulctl grants add --archon audrey --role auditor --scope keeper`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			gr, err := cl.CreateGrant(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.Emit(cmd, gr, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "grant %s: %s %s has role %s on %s\n", gr.ID, gr.SubjectKind, gr.SubjectName, gr.Role, gr.Scope)
				return err
			})
		},
	}
	add.Flags().StringVar(&req.Archon, "archon", "", "the Archon (id or name)")
	add.Flags().StringVar(&req.Team, "team", "", "the team")
	add.Flags().StringVar(&req.Role, "role", "", "admin, operator, auditor, viewer or a custom role")
	add.Flags().StringVar(&req.Scope, "scope", "", "keeper, service:NAME, incarnation:NAME or coven:NAME")
	revoke := &cobra.Command{
		Use: "revoke ID", Aliases: []string{"delete", "rm"}, Short: "Revoke a grant", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := cl.DeleteGrant(cmd.Context(), args[0]); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"revoked": args[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "grant %s revoked\n", args[0])
				return err
			})
		},
	}
	c.AddCommand(list, add, revoke)
	return c
}

// newRolesCmd is `soulctl roles`: built-in and custom roles.
func newRolesCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "roles",
		Aliases: []string{"role"},
		Short:   "List roles; define custom roles as sets of permissions",
	}
	list := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the built-in and custom roles", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			rs, err := cl.ListRoles(cmd.Context())
			if err != nil {
				return err
			}
			return g.Emit(cmd, rs, func(w io.Writer) error {
				row(w, "NAME", "KIND", "PERMISSIONS")
				for _, r := range rs {
					kind := "custom"
					if r.Builtin {
						kind = "built-in"
					}
					row(w, r.Name, kind, dash(strings.Join(r.Permissions, ",")))
				}
				return nil
			})
		},
	}
	var perms []string
	var desc string
	set := &cobra.Command{
		Use:     "set NAME --permission P [--permission P…]",
		Short:   "Create or replace a custom role (manage_access)",
		Example: `  soulctl roles set oncall --permission read --permission unlock --permission resume --permission cancel`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			r, err := cl.PutRole(cmd.Context(), args[0], apitypes.PutRoleRequest{Permissions: perms, Description: desc})
			if err != nil {
				return err
			}
			return g.Emit(cmd, r, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "role %s: %s\n", r.Name, strings.Join(r.Permissions, ", "))
				return err
			})
		},
	}
	set.Flags().StringSliceVar(&perms, "permission", nil, "a permission of the role (repeat; see soulctl access permissions)")
	set.Flags().StringVar(&desc, "description", "", "what the role is for")
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a custom role no grant gives", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := cl.DeleteRole(cmd.Context(), args[0]); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"deleted": args[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "role %s deleted\n", args[0])
				return err
			})
		},
	}
	c.AddCommand(list, set, del)
	return c
}

// newAccessCmd is `soulctl access`: explain decisions.
func newAccessCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "access",
		Short: "Explain who may do what (access check) and list the permissions",
	}
	check := &cobra.Command{
		Use:   "check ARCHON PERMISSION OBJECT",
		Short: "Explain whether an Archon may do a permission on an object: which grant allowed, or why none did",
		Long: `OBJECT is keeper, service:NAME, incarnation:NAME, coven:NAME, run:APPLY_ID,
soul:SID or secret:NAME. Checking another Archon needs manage_access; any
Archon may check itself. Exits 0 whether or not the decision allows: read
"allowed" (or --json).`,
		Example: `  soulctl access check dana run incarnation:db-1
  soulctl access check dana unlock keeper`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			d, err := cl.AccessCheck(cmd.Context(), args[0], args[1], args[2])
			if err != nil {
				return err
			}
			return g.Emit(cmd, d, func(w io.Writer) error {
				verdict := "DENIED"
				if d.Allowed {
					verdict = "ALLOWED"
				}
				row(w, "Decision:", verdict)
				row(w, "Archon:", d.Archon+" ("+d.ArchonID+")")
				row(w, "Permission:", d.Permission)
				row(w, "Object:", d.Object)
				row(w, "Scopes:", strings.Join(d.Scopes, ", "))
				row(w, "Reason:", d.Reason)
				for _, gr := range d.Held {
					row(w, "Holds:", fmt.Sprintf("%s on %s (%s %s, grant %s)", gr.Role, gr.Scope, gr.SubjectKind, dash(gr.SubjectName), gr.ID))
				}
				return nil
			})
		},
	}
	perms := &cobra.Command{
		Use: "permissions", Short: "List every permission and what it allows", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			ps, err := cl.ListPermissions(cmd.Context())
			if err != nil {
				return err
			}
			return g.Emit(cmd, ps, func(w io.Writer) error {
				row(w, "PERMISSION", "ALLOWS")
				for _, p := range ps {
					row(w, p.Name, p.Description)
				}
				return nil
			})
		},
	}
	c.AddCommand(check, perms)
	return c
}
