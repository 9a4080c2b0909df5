package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// soulStateTests hold the conditional transitions of a soul's status:
// what a keeper records must never undo what an Archon decided meanwhile.
var soulStateTests = []test{
	{"MarkConnected", testSoulMarkConnected},
	{"MarkDisconnected", testSoulMarkDisconnected},
	{"Accept", testSoulAccept},
}

func testSoulMarkConnected(t *testing.T, s store.Store) {
	ctx := t.Context()
	for sid, status := range map[string]string{
		"accepted": store.SoulDisconnected, "again": store.SoulConnected,
		"pending": store.SoulPending, "rejected": store.SoulRejected,
	} {
		so := soul(sid)
		so.Status, so.KeeperID = status, ""
		must(t, s.UpsertSoul(ctx, so))
	}
	for _, sid := range []string{"accepted", "again"} {
		must(t, s.MarkSoulConnected(ctx, sid, "k2", at(time.Hour)))
		got, err := s.GetSoul(ctx, sid)
		must(t, err)
		if got.Status != store.SoulConnected || got.KeeperID != "k2" || !got.LastSeen.Equal(at(time.Hour)) {
			t.Fatalf("%s after MarkSoulConnected: %+v", sid, got)
		}
	}
	// Pending or rejected: refused, nothing written.
	for _, sid := range []string{"pending", "rejected"} {
		want, err := s.GetSoul(ctx, sid)
		must(t, err)
		wantConflict(t, s.MarkSoulConnected(ctx, sid, "k2", at(time.Hour)))
		got, err := s.GetSoul(ctx, sid)
		must(t, err)
		diff(t, sid+" after a refused MarkSoulConnected", got, want)
	}
	wantNotFound(t, s.MarkSoulConnected(ctx, "ghost", "k2", base))
}

func testSoulMarkDisconnected(t *testing.T, s store.Store) {
	ctx := t.Context()
	for sid, status := range map[string]string{
		"mine": store.SoulConnected, "theirs": store.SoulConnected, "rejected": store.SoulRejected,
	} {
		so := soul(sid)
		so.Status = status
		if sid == "theirs" {
			so.KeeperID = "k2"
		}
		must(t, s.UpsertSoul(ctx, so))
	}
	must(t, s.MarkSoulDisconnected(ctx, "mine", "k1", at(time.Hour)))
	got, err := s.GetSoul(ctx, "mine")
	must(t, err)
	if got.Status != store.SoulDisconnected || got.KeeperID != "k1" || !got.LastSeen.Equal(at(time.Hour)) {
		t.Fatalf("after MarkSoulDisconnected: %+v", got)
	}
	// Rejected meanwhile, or connected to another keeper now: untouched.
	for _, sid := range []string{"theirs", "rejected"} {
		want, err := s.GetSoul(ctx, sid)
		must(t, err)
		must(t, s.MarkSoulDisconnected(ctx, sid, "k1", at(time.Hour)))
		got, err := s.GetSoul(ctx, sid)
		must(t, err)
		diff(t, sid+" after MarkSoulDisconnected by k1", got, want)
	}
	must(t, s.MarkSoulDisconnected(ctx, "ghost", "k1", base))
}

func testSoulAccept(t *testing.T, s store.Store) {
	ctx := t.Context()
	for sid, status := range map[string]string{
		"pending": store.SoulPending, "rejected": store.SoulRejected, "connected": store.SoulConnected,
	} {
		so := soul(sid)
		so.Status, so.Covens = status, []string{"old"}
		must(t, s.UpsertSoul(ctx, so))
	}
	for _, sid := range []string{"pending", "rejected"} {
		// Under another key than the one the Archon read: refused,
		// nothing written.
		want, err := s.GetSoul(ctx, sid)
		must(t, err)
		wantConflict(t, s.AcceptSoul(ctx, sid, []string{"web"}, []byte("another key")))
		got, err := s.GetSoul(ctx, sid)
		must(t, err)
		diff(t, sid+" after a refused accept", got, want)

		must(t, s.AcceptSoul(ctx, sid, []string{"web", "dc1", "web"}, []byte("key-"+sid)))
		got, err = s.GetSoul(ctx, sid)
		must(t, err)
		want.Status, want.KeeperID, want.Covens = store.SoulDisconnected, "", []string{"dc1", "web"}
		diff(t, sid+" after AcceptSoul", got, want)
		// Accepted now: a second accept is refused.
		wantConflict(t, s.AcceptSoul(ctx, sid, []string{"db"}, []byte("key-"+sid)))
	}
	web, err := s.ListSouls(ctx, store.SoulFilter{Covens: []string{"web"}})
	must(t, err)
	diff(t, "coven web after accepts", len(web), 2)
	old, err := s.ListSouls(ctx, store.SoulFilter{Covens: []string{"old"}})
	must(t, err)
	diff(t, "coven old after accepts", len(old), 1)

	want, err := s.GetSoul(ctx, "connected")
	must(t, err)
	wantConflict(t, s.AcceptSoul(ctx, "connected", []string{"web"}, []byte("key-connected")))
	got, err := s.GetSoul(ctx, "connected")
	must(t, err)
	diff(t, "connected soul after a refused accept", got, want)
	wantNotFound(t, s.AcceptSoul(ctx, "ghost", nil, []byte("k")))
}
