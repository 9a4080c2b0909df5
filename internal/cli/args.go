package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

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

// addNameFlag adds --<flag> as the alternative to the positional argument.
func addNameFlag(c *cobra.Command, p *string, flag, what string) {
	c.Flags().StringVar(p, flag, "", what+" (or as the argument)")
}

// jsonObject parses a --input/--essence value: a JSON object, or @file to
// read it from a file ("-" for stdin is @-).
func jsonObject(flag, val string, stdin func() ([]byte, error)) (map[string]any, error) {
	if val == "" {
		return nil, nil
	}
	b := []byte(val)
	if rest, ok := strings.CutPrefix(val, "@"); ok {
		var err error
		if rest == "-" {
			b, err = stdin()
		} else {
			b, err = os.ReadFile(rest)
		}
		if err != nil {
			return nil, cmdutil.Usage(fmt.Errorf("--%s %s: %w", flag, val, err))
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, cmdutil.Usage(fmt.Errorf("--%s must be a JSON object (or @file): %w", flag, err))
	}
	if m == nil {
		return nil, cmdutil.Usage(errors.New("--" + flag + " must be a JSON object, not null"))
	}
	return m, nil
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
