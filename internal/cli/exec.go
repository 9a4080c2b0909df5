package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/soulstack/soulstack/internal/apiclient"
)

// Exec runs one soulctl command in-process against client and returns what
// `soulctl -o json <argv>` would have printed, decoded (map[string]any,
// []any, string, float64, bool or nil). It is the Checker's apicall
// language: argv has no leading "soulctl", e.g.
//
//	v, err := cli.Exec(ctx, client, []string{"incarnation", "show", "--name", "redis-prod"})
//
// Any -o flag in argv is ignored; --keeper/--token/--config are ignored too,
// since client decides where and as whom. Commands that follow a run
// (--wait, --watch) block until it ends and return the final run, printing
// no progress. A command that fails returns its error: API errors keep
// their *apiclient.APIError (errors.As works), and a run that ended failed
// under --wait is an error whose message names the run. Exec builds a fresh
// command tree per call, so concurrent calls are safe. The value of `incarnation
// run` and `incarnation create` carries the run's apply_id, which the
// Checker can push into @deps.
func Exec(ctx context.Context, client *apiclient.Client, argv []string) (any, error) {
	if client == nil {
		return nil, errors.New("cli.Exec: nil client")
	}
	g := &Globals{client: client, capture: true, Getenv: func(string) string { return "" }, Stdin: strings.NewReader("")}
	root := NewRoot(g)
	root.SetArgs(argv)
	var stderr bytes.Buffer
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	if err := unknownSubcommand(root, argv); err != nil {
		return nil, fmt.Errorf("soulctl %s: %w", strings.Join(argv, " "), err)
	}
	if err := root.ExecuteContext(ctx); err != nil {
		return nil, fmt.Errorf("soulctl %s: %w", strings.Join(argv, " "), err)
	}
	return g.result, nil
}

// HasCommand reports whether name is a top-level soulctl command (or an
// alias of one): whether an apicall starting with it reaches the soulctl
// command tree.
func HasCommand(name string) bool {
	root := NewRoot(&Globals{capture: true, Getenv: func(string) string { return "" }, Stdin: strings.NewReader("")})
	for _, c := range root.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return true
		}
	}
	return false
}
