package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/module/custom"
	// The registry holds the core.* modules once their package is linked.
	_ "github.com/soulstack/soulstack/internal/module/core"
	"github.com/soulstack/soulstack/internal/textutil"
)

func init() { subcommands = append(subcommands, newModuleCmd) }

// Flags of a module, as module list and show print them.
const (
	flagKeeperSide  = "keeper-side"  // runs inside the Keeper (on: keeper)
	flagNeedsRoot   = "needs-root"   // host-global state: root on the host, never under --root
	flagRunsProgram = "runs-program" // runs a program of the caller's choosing
	flagReadOnly    = "read-only"    // changes nothing, runs in check mode too
	flagCustom      = "custom"       // a custom module of the service repository
)

// ModuleSummary is one row of `soulctl module list`.
type ModuleSummary struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Flags   []string `json:"flags"`
}

// ModuleParam is one parameter in `soulctl module show`.
type ModuleParam struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	Default     any    `json:"default,omitempty"`
	Description string `json:"description"`
}

// ModuleDoc is what `soulctl module show` prints: the module's schema in
// words, for people writing tasks.
type ModuleDoc struct {
	Name        string        `json:"name"`
	Summary     string        `json:"summary"`
	Flags       []string      `json:"flags"`
	RunsOn      string        `json:"runs_on"`
	CheckMode   string        `json:"check_mode"`
	Confinement string        `json:"confinement"`
	Params      []ModuleParam `json:"params"`
	ExactlyOne  [][]string    `json:"exactly_one"`
	AtLeastOne  [][]string    `json:"at_least_one"`
	// Output lists the module-specific result fields (register.<name>.<field>)
	// beyond the common ones.
	Output  []ModuleField `json:"output"`
	Example string        `json:"example"`
	// Description, Timeout and MaxOutput are set for custom modules.
	Description string `json:"description,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
	MaxOutput   int    `json:"max_output,omitempty"`
}

// ModuleField is one declared field of a module's result.
type ModuleField struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

func newModuleCmd(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "module",
		Short: "Document the modules tasks can call (offline, like ansible-doc)",
		Long: `Lists the modules a task's module: can name and shows one module's params
(type, required, default, description), its exactly-one/at-least-one groups,
how it behaves in check mode and under a soul's --root, and an example task.
Works offline, from the module registry built into soulctl.

Flags: keeper-side (runs inside the Keeper: the task needs on: keeper),
needs-root (changes host-global state: packages, services, sysctl, users),
runs-program (runs a program of the task's choosing), read-only (changes
nothing; runs in check mode too).`,
	}
	c.AddCommand(newModuleListCmd(g), newModuleShowCmd(g))
	return c
}

func newModuleListCmd(g *Globals) *cobra.Command {
	var repo string
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the modules with a one-line summary and their flags",
		Long: `Lists the core modules built into soulctl and, with --service <repo>, the
typed custom modules of that service repository (modules/<name>/module.yml,
called as service.<name>).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			customs, err := serviceModules(repo)
			if err != nil {
				return err
			}
			names := module.Names()
			out := make([]ModuleSummary, 0, len(names)+len(customs))
			for _, n := range names {
				m, _ := module.Lookup(n)
				s := m.Schema()
				out = append(out, ModuleSummary{Name: n, Summary: s.Summary, Flags: moduleFlags(s)})
			}
			for _, n := range sortedKeys(customs) {
				s := customs[n].Schema()
				out = append(out, ModuleSummary{Name: n, Summary: s.Summary, Flags: append(moduleFlags(s), flagCustom)})
			}
			return g.Emit(cmd, out, func(w io.Writer) error {
				row(w, "NAME", "FLAGS", "SUMMARY")
				for _, m := range out {
					row(w, m.Name, list(m.Flags), dash(m.Summary))
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&repo, "service", "", "also list the custom modules of this service repository (a directory)")
	return c
}

func newModuleShowCmd(g *Globals) *cobra.Command {
	var name, repo string
	c := &cobra.Command{
		Use:   "show [name]",
		Short: "Show a module's params, check-mode and confinement behaviour, and an example task",
		Args:  cobra.MaximumNArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, n := range module.Names() {
				if strings.HasPrefix(n, toComplete) {
					out = append(out, n)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := nameArg(args, name, "name")
			if err != nil {
				return err
			}
			var doc ModuleDoc
			if strings.HasPrefix(n, custom.Prefix) {
				if repo == "" {
					return cmdutil.Usage(fmt.Errorf("%s is a custom module of a service repository: give --service <repo>", n))
				}
				customs, err := serviceModules(repo)
				if err != nil {
					return err
				}
				m, ok := customs[n]
				if !ok {
					return cmdutil.Usage(fmt.Errorf("%s has no module %s%s (custom modules live in modules/<name>/)", repo, n, textutil.Suggest(n, sortedKeys(customs))))
				}
				doc = customDoc(m)
			} else {
				m, ok := module.Lookup(n)
				if !ok {
					return unknownModule(n)
				}
				doc = moduleDoc(m.Name(), m.Schema())
			}
			return g.Emit(cmd, doc, func(w io.Writer) error { return moduleDetail(w, doc) })
		},
	}
	addNameFlag(c, &name, "name", "module name")
	c.Flags().StringVar(&repo, "service", "", "the service repository (a directory) whose custom module service.<name> to show")
	return c
}

// unknownModule is the usage error for a name no module has, with the
// closest name (core. may be left out: file.present finds core.file.present).
func unknownModule(name string) error {
	hint := textutil.Suggest(name, module.Names())
	if hint == "" && !strings.HasPrefix(name, "core.") {
		hint = textutil.Suggest("core."+name, module.Names())
	}
	return cmdutil.Usage(fmt.Errorf("unknown module %q%s; run 'soulctl module list' for the modules", name, hint))
}

// moduleFlags names the schema's flags (never nil: [] in JSON).
func moduleFlags(s module.Schema) []string {
	f := []string{}
	if s.KeeperSide {
		f = append(f, flagKeeperSide)
	}
	if s.Unconfinable {
		f = append(f, flagNeedsRoot)
	}
	if s.RunsProgram {
		f = append(f, flagRunsProgram)
	}
	if s.ReadOnly {
		f = append(f, flagReadOnly)
	}
	return f
}

// moduleDoc describes the module name with schema s.
func moduleDoc(name string, s module.Schema) ModuleDoc {
	d := ModuleDoc{
		Name:       name,
		Summary:    s.Summary,
		Flags:      moduleFlags(s),
		Params:     []ModuleParam{},
		ExactlyOne: groups(s.ExactlyOne),
		AtLeastOne: groups(s.AtLeastOne),
	}
	for _, n := range sortedParams(s) {
		p := s.Params[n]
		d.Params = append(d.Params, ModuleParam{Name: n, Type: string(p.Type), Required: p.Required, Default: p.Default, Description: p.Description})
	}
	d.Output = []ModuleField{}
	outNames := make([]string, 0, len(s.Output))
	for n := range s.Output {
		outNames = append(outNames, n)
	}
	sort.Strings(outNames)
	for _, n := range outNames {
		f := s.Output[n]
		d.Output = append(d.Output, ModuleField{Name: n, Type: string(f.Type), Description: f.Description})
	}
	switch {
	case s.KeeperSide:
		d.RunsOn = "the Keeper only: the task needs on: keeper, in a scenario (not in a destiny)"
	case s.Unconfinable, s.RunsProgram:
		d.RunsOn = "souls only: not on: keeper (the Keeper is not a member host)"
	default:
		d.RunsOn = "souls, or the Keeper with on: keeper"
	}
	switch {
	case s.ReadOnly:
		d.CheckMode = "runs as usual: it changes nothing"
	case s.RunsProgram:
		d.CheckMode = "not executed: reported unknown (\"would run\"), unless the task declares it a read-only probe with changed_when: false"
	default:
		d.CheckMode = "changes nothing: reports changed, with a diff, when it would change something"
	}
	switch {
	case strings.HasPrefix(name, custom.Prefix):
		d.Confinement = "refuses to run under a soul's --root (keeper dev's souls, soul swarm, soul apply --root): --root cannot confine what its program does"
	case s.Unconfinable:
		d.Confinement = "refuses to run under a soul's --root: it changes host-global state, which needs root on the host"
	case s.RunsProgram:
		d.Confinement = "under a soul's --root the program starts in the root directory, but what it does is not confined"
	case s.KeeperSide:
		d.Confinement = "runs inside the Keeper; a soul's --root does not apply"
	default:
		d.Confinement = "confinable: under a soul's --root, the files it touches resolve inside the root ('..' is refused, symlinks cannot leave it)"
	}
	d.Example = moduleExample(name, s)
	return d
}

// sortedParams lists the param names, required ones first, each part in
// alphabetical order.
func sortedParams(s module.Schema) []string {
	names := make([]string, 0, len(s.Params))
	for n := range s.Params {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := s.Params[names[i]].Required, s.Params[names[j]].Required
		if ri != rj {
			return ri
		}
		return names[i] < names[j]
	})
	return names
}

// groups copies gs, never nil ([] in JSON).
func groups(gs [][]string) [][]string {
	out := make([][]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, append([]string(nil), g...))
	}
	return out
}

// moduleExample is a task calling the module with its required params and
// the first param of each exactly-one/at-least-one group, filled with
// placeholders (or the param's default).
func moduleExample(name string, s module.Schema) string {
	if s.Example != "" {
		return s.Example
	}
	var use []string
	seen := map[string]bool{}
	add := func(p string) {
		if _, ok := s.Params[p]; ok && !seen[p] {
			seen[p] = true
			use = append(use, p)
		}
	}
	for _, p := range sortedParams(s) {
		if s.Params[p].Required {
			add(p)
		}
	}
	for _, gs := range [][][]string{s.ExactlyOne, s.AtLeastOne} {
		for _, g := range gs {
			given := false
			for _, p := range g {
				given = given || seen[p]
			}
			if !given && len(g) > 0 {
				add(g[0])
			}
		}
	}
	title := name
	if s.Summary != "" {
		title = s.Summary
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- name: %s\n", yamlScalar(title))
	fmt.Fprintf(&b, "  module: %s\n", name)
	if s.KeeperSide {
		b.WriteString("  on: keeper\n")
	}
	if len(use) == 0 {
		b.WriteString("  params: {}\n")
		return b.String()
	}
	b.WriteString("  params:\n")
	for _, p := range use {
		fmt.Fprintf(&b, "    %s: %s\n", p, placeholder(p, s.Params[p]))
	}
	return b.String()
}

// placeholder is an example value of param name: its default, else a
// value of its type ("<name>" for strings).
func placeholder(name string, p module.Param) string {
	if p.Default != nil {
		return yamlScalar(p.Default)
	}
	ph := yamlScalar("<" + name + ">")
	switch p.Type {
	case module.TypeInt, module.TypeNumber:
		return "1"
	case module.TypeBool:
		return "true"
	case module.TypeStrList:
		return "[" + ph + "]"
	case module.TypeList:
		return "[]"
	case module.TypeMap:
		return "{}"
	default:
		return ph
	}
}

// yamlScalar renders v as a one-line YAML value (JSON is YAML; plain
// strings stay unquoted when that is unambiguous).
func yamlScalar(v any) string {
	if s, ok := v.(string); ok && s != "" && !strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`<\n") &&
		!strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "?") && strings.TrimSpace(s) == s {
		switch strings.ToLower(s) {
		case "true", "false", "yes", "no", "on", "off", "null", "~":
		default:
			if _, err := json.Number(s).Float64(); err != nil {
				return s
			}
		}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// moduleDetail is the table form of module show.
func moduleDetail(w io.Writer, d ModuleDoc) error {
	row(w, "Name:", d.Name)
	row(w, "Summary:", dash(d.Summary))
	row(w, "Flags:", list(d.Flags))
	row(w, "Runs on:", d.RunsOn)
	row(w, "Check mode:", d.CheckMode)
	row(w, "Under --root:", d.Confinement)
	if d.Timeout != "" {
		row(w, "Bounds:", fmt.Sprintf("timeout %s, at most %d bytes of output", d.Timeout, d.MaxOutput))
	}
	if d.Description != "" {
		fmt.Fprintln(w)
		fmt.Fprintln(w, strings.TrimSpace(d.Description))
	}
	fmt.Fprintln(w)
	if len(d.Params) == 0 {
		fmt.Fprintln(w, "No params.")
	} else {
		row(w, "PARAM", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION")
		for _, p := range d.Params {
			req := "no"
			if p.Required {
				req = "yes"
			}
			def := "-"
			if p.Default != nil {
				def = compactJSON(p.Default)
			}
			row(w, p.Name, p.Type, req, def, dash(p.Description))
		}
	}
	for _, g := range d.ExactlyOne {
		fmt.Fprintf(w, "Exactly one of: %s\n", strings.Join(g, ", "))
	}
	for _, g := range d.AtLeastOne {
		fmt.Fprintf(w, "At least one of: %s\n", strings.Join(g, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Result: changed, failed, skipped (boolean), rc, duration_ms (integer), stdout, stderr, msg, diff, status (string), plus:")
	if len(d.Output) == 0 {
		fmt.Fprintln(w, "  no module-specific fields")
	} else {
		row(w, "FIELD", "TYPE", "DESCRIPTION")
		for _, f := range d.Output {
			row(w, f.Name, f.Type, dash(f.Description))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Example:")
	for _, l := range strings.Split(strings.TrimRight(d.Example, "\n"), "\n") {
		fmt.Fprintln(w, "  "+l)
	}
	return nil
}
