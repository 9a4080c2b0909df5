package cli

import (
	"encoding/json"
	"strings"
)

// RunInput is what an `incarnation run` or `incarnation create` command
// line starts: the Checker's guard against secrets passed into inputs
// that are not secret (SPEC §10.2, audit L10) reads it.
type RunInput struct {
	// Incarnation is the incarnation a run starts on ("" for create).
	Incarnation string
	// Service is the service of a create ("" for a run).
	Service  string
	Scenario string
	// Input is the --input given inline (nil when none or @file).
	Input map[string]any
}

// ParseRunInput parses argv (without "soulctl") with soulctl's own
// command tree; ok is false for any other command or a line that does not
// parse.
func ParseRunInput(argv []string) (RunInput, bool) {
	root := NewRoot(&Globals{capture: true, Getenv: func(string) string { return "" }, Stdin: strings.NewReader("")})
	cmd, args, err := root.Find(argv)
	if err != nil || cmd.Parent() == nil || cmd.Parent().Name() != "incarnation" {
		return RunInput{}, false
	}
	if err := cmd.ParseFlags(args); err != nil {
		return RunInput{}, false
	}
	var out RunInput
	name, _ := cmd.Flags().GetString("name")
	if rest := cmd.Flags().Args(); len(rest) > 0 {
		name = rest[0]
	}
	switch cmd.Name() {
	case "run":
		out.Incarnation = name
		out.Scenario, _ = cmd.Flags().GetString("scenario")
	case "create":
		out.Service, _ = cmd.Flags().GetString("service")
		out.Scenario = "create"
	default:
		return RunInput{}, false
	}
	if in, _ := cmd.Flags().GetString("input"); in != "" && !strings.HasPrefix(in, "@") {
		_ = json.Unmarshal([]byte(in), &out.Input)
	}
	return out, true
}
