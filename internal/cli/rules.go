package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func init() { subcommands = append(subcommands, newRulesCmd, newNotifyCmd) }

// newRulesCmd is `soulctl rules` (SPEC §17, docs/rules.md).
func newRulesCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:     "rules",
		Aliases: []string{"rule"},
		Short:   "Event-driven rules: list them, read their decisions, pause and resume them",
		Long: `Rules turn events (health changes, drift, run ends, souls coming and going,
missed schedule ticks) into runs, procedures and notifications, within
guardrails. A rule is named by its id: keeper/<name> for a Keeper-wide rule,
<incarnation>/<name> for the rules/<name>.yml of an incarnation's service.`,
	}
	c.AddCommand(newRulesListCmd(g), newRulesHistoryCmd(g), newRulesPauseCmd(g, true), newRulesPauseCmd(g, false),
		newRulesPutCmd(g), newRulesDeleteCmd(g))
	return c
}

func splitRuleID(id string) (string, string, error) {
	scope, name, ok := strings.Cut(id, "/")
	if !ok || scope == "" || name == "" {
		return "", "", cmdutil.Usage(fmt.Errorf("rule id %q must be keeper/<name> or <incarnation>/<name>", id))
	}
	return scope, name, nil
}

func newRulesListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the rules with their event, action and guardrails", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := cl.ListRules(cmd.Context())
			if err != nil {
				return err
			}
			if list == nil {
				list = []apitypes.Rule{}
			}
			return g.Emit(cmd, list, func(w io.Writer) error {
				row(w, "ID", "ON", "ACTION", "COOLDOWN", "PER HOUR", "CONCURRENT", "DRY RUN", "PAUSED")
				for _, r := range list {
					row(w, r.ID, r.On, r.Action+" "+r.Target, r.Cooldown, strconv.Itoa(r.MaxPerHour), strconv.Itoa(r.MaxConcurrent),
						strconv.FormatBool(r.DryRun), strconv.FormatBool(r.Paused))
				}
				return nil
			})
		},
	}
}

func newRulesHistoryCmd(g *Globals) *cobra.Command {
	var f apiclient.RuleHistoryFilter
	c := &cobra.Command{
		Use: "history [RULE-ID]", Short: "Every decision of the rules (fired, suppressed and why), newest first", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				f.Rule = args[0]
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := cl.RuleHistory(cmd.Context(), f)
			if err != nil {
				return err
			}
			if list == nil {
				list = []apitypes.Firing{}
			}
			return g.Emit(cmd, list, func(w io.Writer) error {
				row(w, "ID", "AT", "RULE", "EVENT", "INCIDENT", "DECISION", "REASON", "STARTED")
				for _, x := range list {
					started := x.ApplyID
					if len(x.TaskIDs) > 0 {
						started = strings.Join(x.TaskIDs, ",")
					}
					if x.Error != "" {
						started = "error: " + x.Error
					}
					row(w, strconv.FormatInt(x.ID, 10), x.At.Format("2006-01-02 15:04:05"), x.Rule, x.EventKind, dash(x.Incident), x.Decision, dash(x.Reason), dash(started))
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&f.Incarnation, "incarnation", "", "only this incarnation's decisions")
	c.Flags().StringVar(&f.Decision, "decision", "", "fired, dry_run, suppressed, failed or resolved")
	c.Flags().Int64Var(&f.Before, "before", 0, "page: decisions older than this id")
	c.Flags().IntVar(&f.Limit, "limit", 50, "how many (1 to 1000)")
	return c
}

func newRulesPauseCmd(g *Globals, pause bool) *cobra.Command {
	var reason string
	use, short := "resume RULE-ID", "Resume a paused rule"
	if pause {
		use, short = "pause RULE-ID", "Pause a rule: the kill switch (keeper/* pauses every rule; admin for keeper/…)"
	}
	c := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scope, name, err := splitRuleID(args[0])
			if err != nil {
				return err
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			verb := "resumed"
			if pause {
				verb = "paused"
				err = cl.PauseRule(cmd.Context(), scope, name, reason)
			} else {
				err = cl.ResumeRule(cmd.Context(), scope, name)
			}
			if err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"rule": args[0], "state": verb}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "rule %s %s\n", args[0], verb)
				return err
			})
		},
	}
	if pause {
		c.Flags().StringVar(&reason, "reason", "", "why (kept with the pause)")
	}
	return c
}

func newRulesPutCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use: "put NAME FILE", Short: "Set a Keeper-wide rule from a YAML file (admin); it acts for you", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.capture {
				return cmdutil.Usage(errors.New("rules put is not available in procedures"))
			}
			b, err := os.ReadFile(args[1])
			if err != nil {
				return cmdutil.Usage(err)
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			r, err := cl.PutKeeperRule(cmd.Context(), args[0], string(b))
			if err != nil {
				return err
			}
			return g.Emit(cmd, r, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "rule %s set\n", r.ID)
				return err
			})
		},
	}
}

func newRulesDeleteCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use: "delete NAME", Short: "Delete a Keeper-wide rule (admin)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := cl.DeleteKeeperRule(cmd.Context(), args[0]); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"deleted": args[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "rule keeper/%s deleted\n", args[0])
				return err
			})
		},
	}
}

// newNotifyCmd is `soulctl notify`: notification endpoints (admin).
func newNotifyCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "notify",
		Short: "Notification endpoints (webhook, slack, email), test sends and dead letters (admin)",
	}
	c.AddCommand(newNotifyTestCmd(g), newNotifySetCmd(g), newNotifyListCmd(g), newNotifyDeleteCmd(g), newNotifyDeadCmd(g))
	return c
}

func newNotifyTestCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use: "test NAME", Short: "Send a test notification to an endpoint now", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			r, err := cl.TestEndpoint(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.Emit(cmd, r, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "test notification delivered to %s\n", r.Endpoint)
				return err
			})
		},
	}
}

func newNotifySetCmd(g *Globals) *cobra.Command {
	var kind, u string
	var cfg []string
	var secretStdin bool
	c := &cobra.Command{
		Use:   "set NAME --kind webhook|slack|email [--url URL] [--config k=v …] [--secret-stdin]",
		Short: "Set a notification endpoint; its secret (HMAC key or SMTP password) is read from stdin, sealed, never shown",
		Example: `  printf %s "$HOOK_KEY" | soulctl notify set pager --kind webhook --url https://hooks.example.com/soulstack --secret-stdin
  soulctl notify set ops-mail --kind email --config smtp=mail.example.com:587 --config from=keeper@example.com --config to=ops@example.com`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := apitypes.PutEndpointRequest{Kind: kind, URL: u, Config: map[string]any{}}
			for _, kv := range cfg {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return cmdutil.Usage(fmt.Errorf("--config %q: want key=value", kv))
				}
				switch {
				case k == "to":
					prev, _ := req.Config["to"].([]any)
					req.Config["to"] = append(prev, v)
				case v == "true" || v == "false":
					req.Config[k] = v == "true"
				default:
					if n, err := strconv.Atoi(v); err == nil {
						req.Config[k] = n
					} else {
						req.Config[k] = v
					}
				}
			}
			if secretStdin {
				b, err := io.ReadAll(io.LimitReader(g.stdin(), 64<<10))
				if err != nil {
					return err
				}
				s := strings.TrimRight(string(b), "\r\n")
				req.Secret = &s
			}
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			e, err := cl.PutEndpoint(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return g.Emit(cmd, e, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "endpoint %s (%s) set\n", e.Name, e.Kind)
				return err
			})
		},
	}
	c.Flags().StringVar(&kind, "kind", "webhook", "webhook (generic JSON), slack (Slack-compatible) or email (SMTP)")
	c.Flags().StringVar(&u, "url", "", "the receiver's URL (webhook, slack)")
	c.Flags().StringArrayVar(&cfg, "config", nil, "key=value: smtp, from, to (repeat), username, starttls, max_attempts")
	c.Flags().BoolVar(&secretStdin, "secret-stdin", false, "read the endpoint's secret from stdin")
	return c
}

func newNotifyListCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the endpoints", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := cl.ListEndpoints(cmd.Context())
			if err != nil {
				return err
			}
			if list == nil {
				list = []apitypes.Endpoint{}
			}
			return g.Emit(cmd, list, func(w io.Writer) error {
				row(w, "NAME", "KIND", "URL", "SECRET", "UPDATED")
				for _, e := range list {
					sec := "no"
					if e.HasSecret {
						sec = "sealed"
					}
					row(w, e.Name, e.Kind, dash(e.URL), sec, ago(e.UpdatedAt))
				}
				return nil
			})
		},
	}
}

func newNotifyDeleteCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use: "delete NAME", Short: "Delete an endpoint", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := cl.DeleteEndpoint(cmd.Context(), args[0]); err != nil {
				return err
			}
			return g.Emit(cmd, map[string]string{"deleted": args[0]}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "endpoint %s deleted\n", args[0])
				return err
			})
		},
	}
}

func newNotifyDeadCmd(g *Globals) *cobra.Command {
	var status string
	c := &cobra.Command{
		Use: "deliveries", Aliases: []string{"dead"}, Short: "Notifications and their attempts (default: the dead letters)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := cl.ListDeliveries(cmd.Context(), status)
			if err != nil {
				return err
			}
			if list == nil {
				list = []apitypes.Delivery{}
			}
			return g.Emit(cmd, list, func(w io.Writer) error {
				row(w, "ID", "ENDPOINT", "STATUS", "ATTEMPTS", "LAST ERROR", "CREATED")
				for _, d := range list {
					row(w, strconv.FormatInt(d.ID, 10), d.Endpoint, d.Status, strconv.Itoa(d.Attempts), dash(d.LastError), ago(d.CreatedAt))
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&status, "status", "dead", "pending, delivered, dead, or \"\" for all")
	return c
}
