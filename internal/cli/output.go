package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/cmdutil"
)

// Output formats of -o.
const (
	FormatTable = "table"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// format validates -o and returns it ("" is table).
func (g *Globals) format() (string, error) {
	switch g.Output {
	case "", FormatTable:
		return FormatTable, nil
	case FormatJSON, FormatYAML:
		return g.Output, nil
	default:
		return "", cmdutil.Usage(fmt.Errorf("unknown output format %q: use table, json or yaml", g.Output))
	}
}

// Emit prints a command's result: v as JSON or YAML with -o json|yaml, or
// through table (which may be nil: then YAML) for the human form. In Exec
// mode it stores v, as decoded JSON, instead of printing.
func (g *Globals) Emit(cmd *cobra.Command, v any, table func(w io.Writer) error) error {
	if g.capture {
		n, err := normalize(v)
		if err != nil {
			return err
		}
		g.result = n
		return nil
	}
	f, err := g.format()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	switch {
	case f == FormatJSON:
		return writeJSON(out, v)
	case f == FormatYAML || table == nil:
		return writeYAML(out, v)
	default:
		tw := newTable(out)
		if err := table(tw); err != nil {
			return err
		}
		return tw.Flush()
	}
}

// normalize turns v into what decoding its JSON gives (maps, slices,
// float64, string, bool, nil), the form Exec returns.
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding result: %w", err)
	}
	var n any
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("decoding result: %w", err)
	}
	return n, nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeYAML prints v as block YAML with the keys in JSON field order: the
// JSON is parsed as YAML (JSON is YAML) into nodes whose flow and quoting
// styles are then cleared, and the encoder quotes only where needed.
func writeYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding YAML: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("encoding YAML: %w", err)
	}
	blockStyle(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("writing YAML: %w", err)
	}
	return enc.Close()
}

func blockStyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && strings.Contains(n.Value, "\n") {
		n.Style = yaml.LiteralStyle
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// newTable returns an aligned column writer; rows are tab-separated.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// row writes one tab-separated row.
func row(w io.Writer, cols ...string) {
	fmt.Fprintln(w, strings.Join(cols, "\t"))
}

// now is the clock of relative times; tests do not depend on it.
var now = time.Now

// ago renders t relative to now: "just now", "42s ago", "5m ago", "3h ago",
// "2d ago"; "-" for the zero time.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now().Sub(t)
	switch {
	case d < 0:
		return "in " + roughDuration(-d)
	case d < 2*time.Second:
		return "just now"
	default:
		return roughDuration(d) + " ago"
	}
}

// roughDuration is d in its largest unit: 42s, 5m, 3h, 2d.
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// stamp renders t as local date and time with its age.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05") + " (" + ago(t) + ")"
}

// stampPtr is stamp of an optional time.
func stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

// human renders a duration for people: 850ms, 1.2s, 2m5s, 1h2m.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
}

// list renders a string list, "-" when empty.
func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

// dash is s or "-" when empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// compactJSON renders v on one line, for map cells.
func compactJSON(v any) string {
	if v == nil {
		return "-"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if s := string(b); s != "{}" && s != "null" {
		return s
	}
	return "-"
}

// writeMapYAML prints a map indented under a heading (state, soulprint).
func writeMapYAML(w io.Writer, indent string, m map[string]any) error {
	if len(m) == 0 {
		fmt.Fprintln(w, indent+"{}")
		return nil
	}
	var sb strings.Builder
	if err := writeYAML(&sb, m); err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimRight(sb.String(), "\n"), "\n") {
		fmt.Fprintln(w, indent+l)
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// isTerminal reports whether w is an interactive terminal.
func (g *Globals) isTerminal(w io.Writer) bool {
	if g.Terminal != nil {
		return g.Terminal()
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
