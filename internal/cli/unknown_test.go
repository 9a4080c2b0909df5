package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/cli"
)

// TestUnknownSubcommand: a word that names no subcommand of a group is a
// usage error (exit 2) with a suggestion, not the group's help and exit 0;
// the Checker's apicalls (Exec) fail the same way. A group alone still
// prints its help.
func TestUnknownSubcommand(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"incarnation", "lst"}, 2, `unknown command "lst" for "soulctl incarnation" (did you mean list?)`},
		{[]string{"-o", "json", "souls", "nope"}, 2, `unknown command "nope" for "soulctl souls"`},
		{[]string{"checker", "procedure", "lsit"}, 2, `unknown command "lsit" for "soulctl checker procedure"`},
		{[]string{"incarnation"}, 0, "Available Commands:"},
		{[]string{"checker", "--help"}, 0, "Available Commands:"},
	} {
		var stdout, stderr bytes.Buffer
		code := cli.Main(ctx, tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("soulctl %s: exit %d (want %d)\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, stdout.String(), stderr.String())
		}
	}

	client, err := apiclient.New("http://127.0.0.1:1", "token")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Exec(ctx, client, []string{"souls", "lst"}); err == nil || !strings.Contains(err.Error(), `unknown command "lst"`) {
		t.Fatalf("apicall souls lst: %v", err)
	}
}

// TestInputNotAnObject: --input that is JSON but not an object says what
// it is, in JSON's terms (not Go's map[string]interface {}).
func TestInputNotAnObject(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"--keeper", "http://127.0.0.1:1", "--token", "t", "incarnation", "run", "x", "--scenario", "s", "--input", `"text"`}
	code := cli.Main(context.Background(), args, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--input must be a JSON object (or @file), not a JSON string") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
