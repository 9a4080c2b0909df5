package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

var authTests = []test{
	{"Archons", testArchons},
	{"DisableAndEnable", testArchonDisable},
	{"Tokens", testTokens},
	{"UISessions", testUISessions},
	{"ListTokensAndTokenArchon", testListTokens},
	{"Audit", testAudit},
	{"Settings", testSettings},
	{"TimeNormalization", testTimeNormalization},
}

func testArchons(t *testing.T, s store.Store) {
	ctx := t.Context()
	n, err := s.CountArchons(ctx)
	must(t, err)
	if n != 0 {
		t.Fatalf("CountArchons on an empty store = %d", n)
	}
	list, err := s.ListArchons(ctx)
	must(t, err)
	diff(t, "empty ListArchons", list, []store.Archon{})

	root := store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}
	ops := store.Archon{ID: "a2", Name: "ops", Role: store.RoleOperator, CreatedAt: at(time.Minute)}
	must(t, s.CreateArchon(ctx, root))
	must(t, s.CreateArchon(ctx, ops))
	wantConflict(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "other", Role: store.RoleViewer}))
	wantConflict(t, s.CreateArchon(ctx, store.Archon{ID: "a3", Name: "root", Role: store.RoleViewer}))

	got, err := s.GetArchon(ctx, "a1")
	must(t, err)
	diff(t, "GetArchon", got, root)
	_, err = s.GetArchon(ctx, "nope")
	wantNotFound(t, err)

	list, err = s.ListArchons(ctx)
	must(t, err)
	diff(t, "ListArchons (by name)", list, []store.Archon{ops, root})
	n, err = s.CountArchons(ctx)
	must(t, err)
	if n != 2 {
		t.Fatalf("CountArchons = %d, want 2", n)
	}

	// A zero CreatedAt is stamped by the store.
	before := time.Now().Add(-time.Second)
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a3", Name: "viewer", Role: store.RoleViewer}))
	got, err = s.GetArchon(ctx, "a3")
	must(t, err)
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("stamped CreatedAt = %v, want about now", got.CreatedAt)
	}
}

func testArchonDisable(t *testing.T, s store.Store) {
	ctx := t.Context()
	root := store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}
	ops := store.Archon{ID: "a2", Name: "ops", Role: store.RoleOperator, CreatedAt: base}
	for _, a := range []store.Archon{root, ops} {
		must(t, s.CreateArchon(ctx, a))
	}
	// The only admin cannot be disabled; others can, and the first time
	// stays.
	wantConflict(t, s.DisableArchon(ctx, "a1", at(time.Minute)))
	must(t, s.DisableArchon(ctx, "a2", at(time.Minute)))
	must(t, s.DisableArchon(ctx, "a2", at(time.Hour)))
	got, err := s.GetArchon(ctx, "a2")
	must(t, err)
	ops.DisabledAt = ptr(at(time.Minute))
	diff(t, "disabled archon", got, ops)
	got, err = s.GetArchon(ctx, "a1")
	must(t, err)
	diff(t, "the last admin after a refused disable", got, root)
	list, err := s.ListArchons(ctx)
	must(t, err)
	diff(t, "ListArchons", list, []store.Archon{ops, root})

	// With a second admin, one of the two can be disabled, not both; a
	// disabled admin does not count.
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a3", Name: "root2", Role: store.RoleAdmin, CreatedAt: base}))
	must(t, s.DisableArchon(ctx, "a1", at(time.Minute)))
	wantConflict(t, s.DisableArchon(ctx, "a3", at(time.Minute)))
	must(t, s.EnableArchon(ctx, "a1"))
	must(t, s.EnableArchon(ctx, "a1"))
	got, err = s.GetArchon(ctx, "a1")
	must(t, err)
	diff(t, "enabled archon", got, root)
	must(t, s.DisableArchon(ctx, "a3", at(time.Minute)))

	wantNotFound(t, s.DisableArchon(ctx, "ghost", base))
	wantNotFound(t, s.EnableArchon(ctx, "ghost"))

	// A disabled Archon can be created (a restore, say).
	off := store.Archon{ID: "a4", Name: "off", Role: store.RoleViewer, CreatedAt: base, DisabledAt: ptr(base)}
	must(t, s.CreateArchon(ctx, off))
	got, err = s.GetArchon(ctx, "a4")
	must(t, err)
	diff(t, "archon created disabled", got, off)
}

func testListTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	root := store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}
	ops := store.Archon{ID: "a2", Name: "ops", Role: store.RoleOperator, CreatedAt: base}
	for _, a := range []store.Archon{root, ops} {
		must(t, s.CreateArchon(ctx, a))
	}
	list, err := s.ListTokens(ctx, "")
	must(t, err)
	diff(t, "ListTokens on no tokens", list, []store.Token{})
	t1 := store.Token{ID: "t1", ArchonID: "a2", Description: "ci", ExpiresAt: at(time.Hour), CreatedAt: at(2 * time.Second)}
	t2 := store.Token{ID: "t2", ArchonID: "a1", ExpiresAt: at(time.Hour), CreatedAt: at(time.Second)}
	t3 := store.Token{ID: "t3", ArchonID: "a2", ExpiresAt: at(time.Hour), CreatedAt: at(3 * time.Second)}
	for _, tok := range []store.Token{t3, t1, t2} {
		must(t, s.CreateToken(ctx, tok))
	}
	must(t, s.RevokeToken(ctx, "t3", at(time.Minute)))
	t3.RevokedAt = ptr(at(time.Minute))

	list, err = s.ListTokens(ctx, "")
	must(t, err)
	diff(t, "ListTokens (oldest first)", list, []store.Token{t2, t1, t3})
	list, err = s.ListTokens(ctx, "a2")
	must(t, err)
	diff(t, "ListTokens of a2", list, []store.Token{t1, t3})
	list, err = s.ListTokens(ctx, "ghost")
	must(t, err)
	diff(t, "ListTokens of an unknown archon", list, []store.Token{})

	// The token and its Archon, read together, disabled mark included
	// (disabling revoked the token).
	must(t, s.DisableArchon(ctx, "a2", at(time.Hour)))
	tok, ar, err := s.GetTokenArchon(ctx, "t1")
	must(t, err)
	t1.RevokedAt = ptr(at(time.Hour))
	diff(t, "GetTokenArchon token", tok, t1)
	ops.DisabledAt = ptr(at(time.Hour))
	diff(t, "GetTokenArchon archon", ar, ops)
	_, _, err = s.GetTokenArchon(ctx, "nope")
	wantNotFound(t, err)
}

func testTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}))
	tok := store.Token{ID: "t1", ArchonID: "a1", Description: "ci", ExpiresAt: at(24 * time.Hour), CreatedAt: base}
	must(t, s.CreateToken(ctx, tok))
	wantConflict(t, s.CreateToken(ctx, tok))
	wantNotFound(t, s.CreateToken(ctx, store.Token{ID: "t2", ArchonID: "ghost", ExpiresAt: base}))

	got, err := s.GetToken(ctx, "t1")
	must(t, err)
	diff(t, "GetToken", got, tok)
	_, err = s.GetToken(ctx, "t9")
	wantNotFound(t, err)

	must(t, s.RevokeToken(ctx, "t1", at(time.Hour)))
	must(t, s.RevokeToken(ctx, "t1", at(2*time.Hour))) // the first revocation time stays
	got, err = s.GetToken(ctx, "t1")
	must(t, err)
	tok.RevokedAt = ptr(at(time.Hour))
	diff(t, "revoked token", got, tok)
	wantNotFound(t, s.RevokeToken(ctx, "t9", base))
}

func testAudit(t *testing.T, s store.Store) {
	ctx := t.Context()
	entries := []store.AuditEntry{
		{Time: at(1 * time.Second), ArchonID: "a1", Action: "POST /v1/services", Target: "redis", Summary: map[string]any{"ref": "v1"}},
		{Time: at(2 * time.Second), ArchonID: "a2", Action: "POST /v1/incarnations", Target: "cache", Summary: map[string]any{"password": "****"}},
		{Time: at(3 * time.Second), Action: "soul.key_mismatch", Target: "h1"},
		{Time: at(4 * time.Second), ArchonID: "a1", Action: "POST /v1/incarnations", Target: "queue"},
	}
	for _, e := range entries {
		must(t, s.AppendAudit(ctx, e))
	}
	got, err := s.ListAudit(ctx, store.AuditFilter{})
	must(t, err)
	if len(got) != 4 {
		t.Fatalf("ListAudit returned %d entries, want 4", len(got))
	}
	for i := range got {
		if got[i].ID == 0 {
			t.Fatalf("entry %d has no ID", i)
		}
		if i > 0 && got[i].ID >= got[i-1].ID {
			t.Fatalf("ListAudit not newest first: ids %d then %d", got[i-1].ID, got[i].ID)
		}
		want := entries[len(entries)-1-i]
		want.ID = got[i].ID
		diff(t, fmt.Sprintf("audit entry %d", i), got[i], want)
	}

	byArchon, err := s.ListAudit(ctx, store.AuditFilter{ArchonID: "a1"})
	must(t, err)
	if len(byArchon) != 2 || byArchon[0].Target != "queue" || byArchon[1].Target != "redis" {
		t.Fatalf("ListAudit(archon a1) = %+v", byArchon)
	}
	byAction, err := s.ListAudit(ctx, store.AuditFilter{Action: "POST /v1/incarnations", Limit: 1})
	must(t, err)
	if len(byAction) != 1 || byAction[0].Target != "queue" {
		t.Fatalf("ListAudit(action, limit 1) = %+v", byAction)
	}
	both, err := s.ListAudit(ctx, store.AuditFilter{ArchonID: "a2", Action: "POST /v1/incarnations"})
	must(t, err)
	if len(both) != 1 || both[0].Target != "cache" {
		t.Fatalf("ListAudit(archon and action) = %+v", both)
	}

	// Limit 0 means 100.
	for i := range 105 {
		must(t, s.AppendAudit(ctx, store.AuditEntry{Action: "bulk", Target: fmt.Sprint(i)}))
	}
	bulk, err := s.ListAudit(ctx, store.AuditFilter{Action: "bulk"})
	must(t, err)
	if len(bulk) != 100 || bulk[0].Target != "104" {
		t.Fatalf("ListAudit default limit: %d entries, first %q", len(bulk), bulk[0].Target)
	}
}

func testSettings(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetSetting(ctx, "signing_key")
	wantNotFound(t, err)
	key := []byte{0, 1, 2, 0xfe, 0xff}
	must(t, s.PutSetting(ctx, "signing_key", key))
	got, err := s.GetSetting(ctx, "signing_key")
	must(t, err)
	diff(t, "setting", got, key)
	must(t, s.PutSetting(ctx, "signing_key", []byte("rotated")))
	got, err = s.GetSetting(ctx, "signing_key")
	must(t, err)
	diff(t, "replaced setting", string(got), "rotated")
	must(t, s.PutSetting(ctx, "empty", nil))
	got, err = s.GetSetting(ctx, "empty")
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("empty setting = %q", got)
	}
}

// testTimeNormalization pins how times round-trip: UTC, microseconds.
func testTimeNormalization(t *testing.T, s store.Store) {
	ctx := t.Context()
	zone := time.FixedZone("UTC+3", 3*3600)
	in := time.Date(2031, 5, 17, 12, 30, 15, 123456789, zone)
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: in}))
	got, err := s.GetArchon(ctx, "a1")
	must(t, err)
	want := time.Date(2031, 5, 17, 9, 30, 15, 123456000, time.UTC)
	if !got.CreatedAt.Equal(want) || got.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt = %v (%v), want %v in UTC", got.CreatedAt, got.CreatedAt.Location(), want)
	}
}
