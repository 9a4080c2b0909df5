package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
)

// TestJoinTokenCommands: create --max-uses, list (uses, limits, status, no
// secrets) and revoke, against a real Keeper.
func TestJoinTokenCommands(t *testing.T) {
	k := startKeeper(t)
	if r := k.ctl(t, "join-token", "create", "--covens", "web", "--max-uses", "-1"); r.Code != 2 {
		t.Errorf("--max-uses -1: exit %d, want a usage error\n%s", r.Code, r.Stderr)
	}
	out := k.ctl(t, "join-token", "create", "--covens", "web", "--ttl", "1h", "--max-uses", "2", "-o", "json").must(t)
	var limited apitypes.CreatedJoinToken
	if err := json.Unmarshal([]byte(out.Stdout), &limited); err != nil || limited.MaxUses != 2 {
		t.Fatalf("join-token create --max-uses 2: %v\n%s", err, out.Stdout)
	}
	if r := k.ctl(t, "join-token", "create", "--covens", "db", "--max-uses", "1").must(t); !strings.Contains(r.Stdout, "Max uses:") {
		t.Errorf("join-token create does not show the limit:\n%s", r.Stdout)
	}
	open := k.ctl(t, "join-token", "create", "--covens", "db", "-q").must(t)

	// Tokens made within one second list in id order: find ours.
	line := func(out, id string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, id) {
				return l
			}
		}
		return ""
	}
	tbl := k.ctl(t, "join-token", "list").must(t)
	lines := strings.Split(strings.TrimRight(tbl.Stdout, "\n"), "\n")
	if l := line(tbl.Stdout, limited.ID); len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(l, "0/2") || !strings.Contains(l, "active") {
		t.Fatalf("join-token list:\n%s", tbl.Stdout)
	}

	k.ctl(t, "join-token", "revoke", limited.ID).must(t)
	js := k.ctl(t, "join-token", "list", "-o", "json").must(t)
	var list []apitypes.JoinToken
	if err := json.Unmarshal([]byte(js.Stdout), &list); err != nil || len(list) != 3 {
		t.Fatalf("join-token list -o json: %v\n%s", err, js.Stdout)
	}
	for _, jt := range list {
		if jt.ID == limited.ID && (jt.RevokedAt == nil || jt.MaxUses != 2) || jt.ID != limited.ID && jt.RevokedAt != nil {
			t.Errorf("listed %+v after revoking %s", jt, limited.ID)
		}
	}
	for _, secret := range []string{limited.Token, strings.TrimSpace(open.Stdout)} {
		if strings.Contains(js.Stdout, secret) || strings.Contains(tbl.Stdout, secret) {
			t.Errorf("join-token list shows a token's secret")
		}
	}
	if r := k.ctl(t, "join-token", "list").must(t); !strings.Contains(line(r.Stdout, limited.ID), "revoked") {
		t.Errorf("join-token list after revoke:\n%s", r.Stdout)
	}
	if r := k.ctl(t, "join-token", "revoke", "nope"); r.Code != 1 || !strings.Contains(r.Stderr, "404") {
		t.Errorf("join-token revoke of an unknown id: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestArchonLockOutCommands: an admin finds the tokens a leaked token
// minted (token list) and locks the Archon out (archon disable), by name.
func TestArchonLockOutCommands(t *testing.T) {
	k := startKeeper(t)
	out := k.ctl(t, "archon", "create", "alice", "--role", "operator", "-o", "json").must(t)
	var alice apitypes.CreatedArchon
	if err := json.Unmarshal([]byte(out.Stdout), &alice); err != nil {
		t.Fatal(err)
	}
	as := func(token string, args ...string) ctlResult {
		return ctl(t, nil, "", append([]string{"--keeper", k.URL, "--token", token}, args...)...)
	}
	minted := strings.TrimSpace(as(alice.Token.Token, "token", "create", "-q", "--description", "minted").must(t).Stdout)

	// The admin's list has every Archon's tokens; --archon takes a name.
	all := k.ctl(t, "token", "list").must(t)
	if !strings.HasPrefix(all.Stdout, "ID") || !strings.Contains(all.Stdout, "minted") || !strings.Contains(all.Stdout, alice.Token.ID) {
		t.Fatalf("token list:\n%s", all.Stdout)
	}
	js := k.ctl(t, "token", "list", "--archon", "alice", "-o", "json").must(t)
	var theirs []apitypes.Token
	if err := json.Unmarshal([]byte(js.Stdout), &theirs); err != nil || len(theirs) != 2 {
		t.Fatalf("token list --archon alice: %v\n%s", err, js.Stdout)
	}
	for _, tk := range theirs {
		if tk.ArchonID != alice.Archon.ID {
			t.Errorf("token list --archon alice lists %+v", tk)
		}
	}
	if strings.Contains(all.Stdout+js.Stdout, minted) || strings.Contains(all.Stdout+js.Stdout, alice.Token.Token) {
		t.Error("token list shows a token")
	}
	// Alice sees her own only.
	if r := as(alice.Token.Token, "token", "list").must(t); strings.Count(r.Stdout, "\n") != 3 {
		t.Errorf("alice's token list:\n%s", r.Stdout)
	}

	d := k.ctl(t, "archon", "disable", "alice").must(t)
	if !strings.Contains(d.Stdout, "alice") || !strings.Contains(d.Stdout, "disabled") {
		t.Errorf("archon disable:\n%s", d.Stdout)
	}
	for _, tok := range []string{alice.Token.Token, minted} {
		if r := as(tok, "whoami"); r.Code != 1 || !strings.Contains(r.Stderr, "archon disabled") {
			t.Errorf("whoami as a disabled archon: exit %d\n%s", r.Code, r.Stderr)
		}
	}
	if r := k.ctl(t, "archon", "list").must(t); !strings.Contains(r.Stdout, "STATUS") || !strings.Contains(r.Stdout, "disabled") {
		t.Errorf("archon list:\n%s", r.Stdout)
	}
	if r := k.ctl(t, "archon", "disable", "root"); r.Code != 1 || !strings.Contains(r.Stderr, "409") || !strings.Contains(r.Stderr, "last enabled admin") {
		t.Errorf("disabling the last admin: exit %d\n%s", r.Code, r.Stderr)
	}
	// Disabling revoked her tokens (SPEC §10.2): enabling her brings none
	// back; the admin gives her a new one.
	k.ctl(t, "archon", "enable", "--id", alice.Archon.ID).must(t)
	if r := as(alice.Token.Token, "whoami"); r.Code != 1 || !strings.Contains(r.Stderr, "token revoked") {
		t.Errorf("whoami with a token of a re-enabled archon: exit %d\n%s", r.Code, r.Stderr)
	}
	fresh := strings.TrimSpace(k.ctl(t, "token", "create", "-q", "--archon", alice.Archon.ID).must(t).Stdout)
	as(fresh, "whoami").must(t)
}
