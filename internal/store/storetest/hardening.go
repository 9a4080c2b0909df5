package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// hardeningTests pin the store's part of the December audit's fixes
// (SPEC §10.2 "Hardening", §10.3).
var hardeningTests = []test{
	{"RevokeTokenRevokesMinted", testRevokeMinted},
	{"DisableArchonRevokesTokens", testDisableRevokes},
	{"DeleteSetting", testDeleteSetting},
	{"ScheduleOwner", testScheduleOwner},
	{"DeleteSoul", testDeleteSoul},
	{"RekeySoul", testRekeySoul},
}

// testRevokeMinted: audit L8 — revoking a token revokes every token minted
// from it, transitively, and nothing else.
func testRevokeMinted(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}))
	mk := func(id, parent string) store.Token {
		tok := store.Token{ID: id, ArchonID: "a1", ExpiresAt: at(24 * time.Hour), CreatedAt: base, ParentID: parent}
		must(t, s.CreateToken(ctx, tok))
		return tok
	}
	mk("root", "")
	child := mk("child", "root")
	mk("grandchild", "child")
	mk("sibling", "")
	mk("other-child", "sibling")
	got, err := s.GetToken(ctx, "child")
	must(t, err)
	diff(t, "minted token", got, child)

	must(t, s.RevokeToken(ctx, "root", at(time.Hour)))
	for id, revoked := range map[string]bool{"root": true, "child": true, "grandchild": true, "sibling": false, "other-child": false} {
		tok, err := s.GetToken(ctx, id)
		must(t, err)
		if (tok.RevokedAt != nil) != revoked {
			t.Errorf("token %s revoked = %v, want %v", id, tok.RevokedAt != nil, revoked)
		}
	}
	// A child revoked earlier keeps its own time.
	must(t, s.RevokeToken(ctx, "other-child", at(time.Minute)))
	must(t, s.RevokeToken(ctx, "sibling", at(time.Hour)))
	tok, err := s.GetToken(ctx, "other-child")
	must(t, err)
	diff(t, "earlier revocation kept", tok.RevokedAt, ptr(at(time.Minute)))
	wantNotFound(t, s.RevokeToken(ctx, "ghost", base))
}

// testDisableRevokes: SPEC §10.2 — disabling an Archon revokes its tokens;
// enabling it again does not bring them back.
func testDisableRevokes(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}))
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a2", Name: "ops", Role: store.RoleOperator, CreatedAt: base}))
	must(t, s.CreateToken(ctx, store.Token{ID: "t-root", ArchonID: "a1", ExpiresAt: at(time.Hour), CreatedAt: base}))
	must(t, s.CreateToken(ctx, store.Token{ID: "t-ops", ArchonID: "a2", ExpiresAt: at(time.Hour), CreatedAt: base}))
	must(t, s.CreateToken(ctx, store.Token{ID: "t-ops-old", ArchonID: "a2", ExpiresAt: at(time.Hour), CreatedAt: base,
		RevokedAt: ptr(base)}))
	must(t, s.DisableArchon(ctx, "a2", at(time.Minute)))
	must(t, s.EnableArchon(ctx, "a2"))
	ts, err := s.ListTokens(ctx, "a2")
	must(t, err)
	for _, tok := range ts {
		want := at(time.Minute)
		if tok.ID == "t-ops-old" {
			want = base
		}
		if tok.RevokedAt == nil || !tok.RevokedAt.Equal(want) {
			t.Errorf("token %s revoked at %v, want %v", tok.ID, tok.RevokedAt, want)
		}
	}
	// The refused disable of the last admin revokes nothing.
	wantConflict(t, s.DisableArchon(ctx, "a1", at(time.Minute)))
	tok, err := s.GetToken(ctx, "t-root")
	must(t, err)
	if tok.RevokedAt != nil {
		t.Errorf("refused disable revoked the admin's token")
	}
}

func testDeleteSetting(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.PutSetting(ctx, "auth.signing_key", []byte("seed")))
	must(t, s.PutSetting(ctx, "other", []byte("kept")))
	must(t, s.DeleteSetting(ctx, "auth.signing_key"))
	_, err := s.GetSetting(ctx, "auth.signing_key")
	wantNotFound(t, err)
	must(t, s.DeleteSetting(ctx, "auth.signing_key")) // missing: no error
	v, err := s.GetSetting(ctx, "other")
	must(t, err)
	diff(t, "other setting", string(v), "kept")
}

// testScheduleOwner: audit M4 — a schedule carries its owner, and is
// listed paused when the owner is disabled, deleted or unknown.
func testScheduleOwner(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a1", Name: "root", Role: store.RoleAdmin, CreatedAt: base}))
	must(t, s.CreateArchon(ctx, store.Archon{ID: "a2", Name: "ops", Role: store.RoleOperator, CreatedAt: base}))
	must(t, s.PutProcedure(ctx, store.Procedure{Name: "beacon", Source: procedureSource}))
	for i, owner := range []string{"a1", "a2", "gone", ""} {
		must(t, s.CreateSchedule(ctx, store.Schedule{ID: "s" + string(rune('0'+i)), Procedure: "beacon", Cron: "@every 5s",
			OwnerID: owner, CreatedAt: at(time.Duration(i) * time.Second)}))
	}
	must(t, s.DisableArchon(ctx, "a2", at(time.Minute)))
	list, err := s.ListSchedules(ctx)
	must(t, err)
	type view struct {
		OwnerID, Owner string
		Paused         bool
	}
	var got []view
	for _, sc := range list {
		got = append(got, view{sc.OwnerID, sc.Owner, sc.Paused})
		if sc.Paused && sc.PauseReason == "" {
			t.Errorf("schedule %s paused without a reason", sc.ID)
		}
	}
	diff(t, "schedules with owners", got, []view{
		{"a1", "root", false}, {"a2", "ops", true}, {"gone", "", true}, {"", "", true},
	})
	must(t, s.EnableArchon(ctx, "a2"))
	list, err = s.ListSchedules(ctx)
	must(t, err)
	if list[1].Paused {
		t.Errorf("schedule of a re-enabled owner still paused: %+v", list[1])
	}
}

// testDeleteSoul: audit L2 — a soul can be forgotten with its covens and
// memberships, so its SID can join again.
func testDeleteSoul(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.UpsertSoul(ctx, soul("h1", "redis")))
	must(t, s.UpsertSoul(ctx, soul("h2", "redis")))
	readyIncarnation(t, s, "redis", "cache-a", "h1", "h2")
	readyIncarnation(t, s, "redis", "cache-b", "h1")
	incs, err := s.DeleteSoul(ctx, "h1")
	must(t, err)
	diff(t, "incarnations left", incs, []string{"cache-a", "cache-b"})
	_, err = s.GetSoul(ctx, "h1")
	wantNotFound(t, err)
	souls, err := s.ListSouls(ctx, store.SoulFilter{Covens: []string{"redis"}})
	must(t, err)
	if len(souls) != 1 || souls[0].SID != "h2" {
		t.Fatalf("souls in coven redis after delete = %v", souls)
	}
	a, err := s.GetIncarnation(ctx, "cache-a")
	must(t, err)
	diff(t, "cache-a members", a.Members, []string{"h2"})
	_, err = s.DeleteSoul(ctx, "h1")
	wantNotFound(t, err)
	// The SID is free again.
	must(t, s.CreateSoul(ctx, soul("h1")))
}

// testRekeySoul: audit L2 — a SID moves to a new key, keeping its covens;
// a connected soul is disconnected.
func testRekeySoul(t *testing.T, s store.Store) {
	ctx := t.Context()
	h1 := soul("h1", "redis")
	must(t, s.UpsertSoul(ctx, h1))
	pending := soul("p1")
	pending.Status = store.SoulPending
	must(t, s.UpsertSoul(ctx, pending))
	must(t, s.RekeySoul(ctx, "h1", []byte("new-key"), at(time.Hour)))
	got, err := s.GetSoul(ctx, "h1")
	must(t, err)
	h1.PublicKey, h1.Status, h1.KeeperID, h1.LastSeen, h1.Covens = []byte("new-key"), store.SoulDisconnected, "", at(time.Hour), []string{"redis"}
	diff(t, "rekeyed soul", got, h1)
	must(t, s.RekeySoul(ctx, "p1", []byte("k2"), at(time.Hour)))
	got, err = s.GetSoul(ctx, "p1")
	must(t, err)
	diff(t, "rekeyed pending soul status", got.Status, store.SoulPending)
	wantNotFound(t, s.RekeySoul(ctx, "ghost", []byte("k"), base))
}
