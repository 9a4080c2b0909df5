package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/spf13/cobra"
)

func init() {
	incarnationSubcommands = append(incarnationSubcommands, newIncarnationHealthCmd)
}

// newIncarnationHealthCmd is `soulctl incarnation health` (SPEC §14.1).
func newIncarnationHealthCmd(g *Globals) *cobra.Command {
	var (
		name        string
		watch       bool
		interval    time.Duration
		transitions int
	)
	c := &cobra.Command{
		Use:   "health [name] [--watch] [-o json]",
		Short: "Show the incarnation's health checks: per check the hosts by status",
		Long: `Shows the health checks of the incarnation's service (health/<name>.yml),
which the souls run on their own schedule: per check the counts by status
(OK, WARNING, CRITICAL, UNKNOWN, or stale when a host stopped reporting),
then every host that is not OK with its message and since when, and the
newest transitions. With --watch it prints again whenever something
changed (-o json: one JSON document per change) until interrupted.`,
		Example: `  soulctl incarnation health cache
  soulctl incarnation health cache --watch
  soulctl incarnation health --name cache -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, cl, err := g.nameAndClient(cmd, args, name, "name")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			q := url.Values{"transitions": {strconv.Itoa(transitions)}}
			var last []byte
			for {
				h, err := call[apitypes.IncarnationHealth](ctx, cl, http.MethodGet, incPath(n, "health"), q, nil)
				if err != nil {
					if watch && ctx.Err() != nil {
						return nil
					}
					return err
				}
				key := healthKey(h.View)
				if !watch || !bytes.Equal(key, last) {
					last = key
					if err := g.Emit(cmd, h.JSON, func(w io.Writer) error { return healthTable(w, h.View) }); err != nil {
						return err
					}
				}
				if !watch {
					return nil
				}
				t := time.NewTimer(interval)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				}
			}
		},
	}
	addNameFlag(c, &name, "name", "incarnation name")
	c.Flags().BoolVarP(&watch, "watch", "w", false, "print again whenever the health changes, until interrupted")
	c.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch asks the Keeper")
	c.Flags().IntVar(&transitions, "transitions", 10, "how many of the newest transitions to show (0-1000)")
	return c
}

// healthKey is what --watch compares: statuses and messages, not the
// report times that change at every summary.
func healthKey(h apitypes.IncarnationHealth) []byte {
	var b bytes.Buffer
	for _, c := range h.Checks {
		for _, host := range c.Hosts {
			fmt.Fprintf(&b, "%s/%s=%s:%s\n", c.Name, host.SID, host.Status, host.Message)
		}
	}
	for _, t := range h.Transitions {
		fmt.Fprintf(&b, "t%d\n", t.ID)
	}
	return b.Bytes()
}

// countsLine renders counts by status in a fixed order.
func countsLine(counts map[string]int) string {
	order := []string{"OK", "WARNING", "CRITICAL", "UNKNOWN", "stale"}
	var parts []string
	for _, s := range order {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
		}
	}
	var others []string
	for s := range counts {
		if !slices.Contains(order, s) {
			others = append(others, s)
		}
	}
	sort.Strings(others)
	for _, s := range others {
		parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
	}
	if len(parts) == 0 {
		return "no reports yet"
	}
	return strings.Join(parts, ", ")
}

// healthTable prints the checks with their counts, the hosts not OK, and
// the newest transitions.
func healthTable(w io.Writer, h apitypes.IncarnationHealth) error {
	if len(h.Checks) == 0 {
		_, err := fmt.Fprintf(w, "%s: no health check reports (the service has no health/ checks, or no soul reported yet)\n", h.Incarnation)
		return err
	}
	row(w, "CHECK", "HOST", "STATUS", "SINCE", "MESSAGE")
	for _, c := range h.Checks {
		row(w, c.Name, "", countsLine(c.Counts), "", "")
		for _, host := range c.Hosts {
			if host.Status == "OK" {
				continue
			}
			msg := host.Message
			if host.Status == "stale" {
				msg = fmt.Sprintf("last %s, reported %s: %s", host.LastStatus, ago(host.ReportedAt), host.Message)
			}
			row(w, "", host.SID, host.Status, ago(host.Since), dash(msg))
		}
	}
	if len(h.Transitions) > 0 {
		row(w, "", "", "", "", "")
		row(w, "TRANSITION", "HOST", "TO", "WHEN", "MESSAGE")
		for _, t := range h.Transitions {
			row(w, t.Check, t.SID, t.From+" → "+t.To, ago(t.At), dash(t.Message))
		}
	}
	return nil
}
