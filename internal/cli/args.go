package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

// nameArg is the resource a command is about: the positional argument, or
// the --<flag> value (the Checker's procedures write `--name x`). Exactly
// one of them must be given.
func nameArg(args []string, flagVal, flag string) (string, error) {
	switch {
	case len(args) == 1 && flagVal != "" && args[0] != flagVal:
		return "", cmdutil.Usage(fmt.Errorf("give the %s once: as an argument or with --%s", flag, flag))
	case len(args) == 1:
		return args[0], nil
	case flagVal != "":
		return flagVal, nil
	default:
		return "", cmdutil.Usage(fmt.Errorf("missing %s: pass it as an argument or with --%s", flag, flag))
	}
}

// nameAndClient resolves a command's name (argument or --flag, as nameArg)
// and the API client: the preamble of every command acting on one named
// object.
func (g *Globals) nameAndClient(cmd *cobra.Command, args []string, flagVal, flag string) (string, *apiclient.Client, error) {
	name, err := nameArg(args, flagVal, flag)
	if err != nil {
		return "", nil, err
	}
	cl, err := g.Client(cmd.Context())
	if err != nil {
		return "", nil, err
	}
	return name, cl, nil
}

// addNameFlag adds --<flag> as the alternative to the positional argument.
func addNameFlag(c *cobra.Command, p *string, flag, what string) {
	c.Flags().StringVar(p, flag, "", what+" (or as the argument)")
}

// jsonObject parses a --input/--essence value: a JSON object, or @file to
// read it from a file ("-" for stdin is @-).
func jsonObject(g *Globals, flag, val string) (map[string]any, error) {
	if val == "" {
		return nil, nil
	}
	b := []byte(val)
	if rest, ok := strings.CutPrefix(val, "@"); ok {
		var err error
		if rest == "-" {
			b, err = io.ReadAll(g.stdin())
		} else {
			b, err = g.readLocalFile("--"+flag, rest)
		}
		if err != nil {
			return nil, cmdutil.Usage(fmt.Errorf("--%s %s: %w", flag, val, err))
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, cmdutil.Usage(fmt.Errorf("--%s must be a JSON object (or @file), not a JSON %s", flag, te.Value))
		}
		return nil, cmdutil.Usage(fmt.Errorf("--%s must be a JSON object (or @file): %w", flag, err))
	}
	if m == nil {
		return nil, cmdutil.Usage(errors.New("--" + flag + " must be a JSON object, not null"))
	}
	return m, nil
}

// readLocalFile reads a file named on the command line. In a procedure
// (Exec) the command runs inside the Keeper: a file of the Keeper's host
// (its data directory, its configuration) is not the procedure author's to
// read, so values must be given inline there.
func (g *Globals) readLocalFile(what, path string) ([]byte, error) {
	if g.capture {
		return nil, errLocalFiles(what)
	}
	return os.ReadFile(path)
}

// errLocalFiles refuses a command-line form that reads the local file
// system when the command runs inside the Keeper (Exec).
func errLocalFiles(what string) error {
	return cmdutil.Usage(fmt.Errorf("%s reads files of the Keeper's host, which procedures may not do: give the value inline", what))
}

// covensFlag normalizes a --covens list: trims, drops empties.
func covensFlag(in []string) []string {
	out := make([]string, 0, len(in))
	for _, c := range in {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}
