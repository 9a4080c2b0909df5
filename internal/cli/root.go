// Package cli is the soulctl command tree (cobra), one file per verb. The
// same tree is the Checker's apicall language, run in-process (Exec).
//
// # Writing a verb
//
// A verb file appends its constructor to subcommands in init(). A command
// that talks to the Keeper gets its client from g.Client(ctx) and prints
// its result with g.Emit(cmd, value, table): value is what -o json|yaml
// prints (and what Exec returns), table renders the human form. Errors
// from the API go up unchanged; Main renders them (validation problems as
// file:line:col lines) and maps them to exit codes (400/422 → 2).
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/version"
)

// subcommands are added by each verb file's init().
var subcommands []func(*Globals) *cobra.Command

// Globals are the flags every soulctl command shares, and how the command
// reaches its environment (so tests and Exec can supply their own).
type Globals struct {
	Keeper      string
	Token       string
	Output      string // table|json|yaml
	Config      string // config file path; "" means the default
	Fingerprint string // pin the Keeper's CA (https)
	CAFile      string // trust this CA file (https)

	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Stdin is where prompts read from; nil means os.Stdin.
	Stdin io.Reader
	// Terminal reports whether stdout is an interactive terminal (live
	// progress redraws lines); nil means a check of os.Stdout.
	Terminal func() bool

	stderr  io.Writer         // where warnings go (set by Run)
	client  *apiclient.Client // set by Exec: commands use it as is
	capture bool              // Exec mode: Emit stores instead of printing
	result  any               // what Emit stored in capture mode
}

// NewRoot builds the soulctl command tree.
func NewRoot(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "soulctl",
		Short: "Soul Stack command line for Archons",
		Long: `soulctl drives a Soul Stack Keeper through its Operator API: services,
incarnations and their runs, souls, tokens and the audit log; and works on
service repositories offline (scenario validate|test).

The Keeper and the token come from --keeper/--token, else $SOULCTL_KEEPER/
$SOULCTL_TOKEN, else the config file written by "soulctl login" (or by
"keeper dev"): $XDG_CONFIG_HOME/soulctl/config.yaml, ~/.config/soulctl/config.yaml
by default.

Exit codes: 0 success, 1 the operation failed (for example a run that ended
failed), 2 usage or validation error (including 400/422 from the Keeper).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("soulctl {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&g.Keeper, "keeper", "", "Keeper URL, e.g. https://keeper.example:8080 (env SOULCTL_KEEPER)")
	pf.StringVar(&g.Token, "token", "", "Archon JWT (env SOULCTL_TOKEN)")
	pf.StringVarP(&g.Output, "output", "o", "table", "output format: table|json|yaml")
	pf.StringVar(&g.Config, "config", "", "config file (env SOULCTL_CONFIG; default $XDG_CONFIG_HOME/soulctl/config.yaml)")
	pf.StringVar(&g.Fingerprint, "fingerprint", "", "pin the Keeper CA by its SHA-256 fingerprint (env SOULCTL_FINGERPRINT)")
	pf.StringVar(&g.CAFile, "ca-file", "", "trust the Keeper CA in this PEM file (env SOULCTL_CA_FILE)")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	for _, c := range subcommands {
		root.AddCommand(c(g))
	}
	return root
}

// Main runs soulctl and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, &Globals{}, args, stdout, stderr)
}

// Run executes soulctl args with g (its environment hooks: Getenv, Stdin,
// Terminal) and returns the exit code, printing errors (with API details)
// to stderr. Main is Run with the process's environment.
func (g *Globals) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, g, args, stdout, stderr)
}

// run executes args with g and maps the outcome to an exit code, printing
// errors (with API details) to stderr.
func run(ctx context.Context, g *Globals, args []string, stdout, stderr io.Writer) int {
	root := NewRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	g.stderr = stderr
	if g.Stdin != nil {
		root.SetIn(g.Stdin)
	}
	if err := unknownSubcommand(root, args); err != nil {
		return cmdutil.Code(err, stderr)
	}
	return cmdutil.Code(presentError(root.ExecuteContext(ctx)), stderr)
}

// unknownSubcommand refuses args that reach a command group (souls,
// incarnation, checker procedure, …) with a word that names none of its
// subcommands: cobra would print the group's help and succeed, so
// `soulctl incarnation lst` in a script, or a mistyped Checker apicall,
// would pass silently. A group alone still prints its help.
func unknownSubcommand(root *cobra.Command, args []string) error {
	c, rest, err := root.Find(args)
	if err != nil || c == root || c.Runnable() || !c.HasSubCommands() {
		return nil
	}
	if err := c.ParseFlags(rest); err != nil {
		return nil // cobra reports it (or serves --help)
	}
	pos := c.Flags().Args()
	if len(pos) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", pos[0], c.CommandPath())
	c.SuggestionsMinimumDistance = 2
	if s := c.SuggestionsFor(pos[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
	}
	return cmdutil.Usage(fmt.Errorf("%s; run '%s --help' for its commands", msg, c.CommandPath()))
}

func (g *Globals) getenv(k string) string {
	if g.Getenv != nil {
		return g.Getenv(k)
	}
	return os.Getenv(k)
}

func (g *Globals) stdin() io.Reader {
	if g.Stdin != nil {
		return g.Stdin
	}
	return os.Stdin
}
