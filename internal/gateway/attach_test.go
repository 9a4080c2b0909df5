package gateway_test

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// An Archon rejects an accepted soul between the keeper's decision on its
// hello and the keeper recording it connected: the rejection stands and
// the soul is refused, not welcomed.
func TestAttachKeepsConcurrentReject(t *testing.T) {
	dir := t.TempDir()
	var st store.Store
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{wrap: func(s store.Store) store.Store {
		st = s
		return &interleaved{Store: s, between: func(sid string) {
			if err := st.SetSoulStatus(context.Background(), sid, store.SoulRejected, "", time.Now()); err != nil {
				t.Error(err)
			}
		}}
	}})
	r := dialRaw(t, k)
	if err := k.store.CreateSoul(context.Background(), store.Soul{SID: "web-1", PublicKey: r.key.Public().(ed25519.PublicKey),
		Status: store.SoulDisconnected, Covens: []string{"web"}, Version: "test", LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
	m, err := r.handshake("web-1", nil, "")
	if err != nil || m.GetRejected().GetReason() != pb.Rejected_REASON_REJECTED {
		t.Fatalf("hello: %v, %v; want rejected (an Archon rejected it before it was recorded connected)", m, err)
	}
	if s := k.soul(t, "web-1"); s.Status != store.SoulRejected {
		t.Fatalf("soul = %+v, want still rejected", s)
	}
	if k.gw.Connected("web-1") {
		t.Fatal("the rejected soul holds a session")
	}
}

// detachSignal is a store that reports on ended when a keeper records a
// soul disconnected (whichever way it does).
type detachSignal struct {
	store.Store
	ended chan string
}

func (s *detachSignal) SetSoulStatus(ctx context.Context, sid, status, keeperID string, at time.Time) error {
	err := s.Store.SetSoulStatus(ctx, sid, status, keeperID, at)
	if status == store.SoulDisconnected {
		s.signal(sid)
	}
	return err
}

func (s *detachSignal) MarkSoulDisconnected(ctx context.Context, sid, keeperID string, at time.Time) error {
	err := s.Store.MarkSoulDisconnected(ctx, sid, keeperID, at)
	s.signal(sid)
	return err
}

func (s *detachSignal) signal(sid string) {
	select {
	case s.ended <- sid:
	default:
	}
}

// An Archon rejects a connected soul and its stream is closed: the soul
// stays rejected, not recorded disconnected (accepted) as it goes.
func TestDetachKeepsReject(t *testing.T) {
	dir := t.TempDir()
	ended := make(chan string, 10)
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{wrap: func(s store.Store) store.Store {
		return &detachSignal{Store: s, ended: ended}
	}})
	r := dialRaw(t, k)
	if m, err := r.handshake("web-2", nil, k.joinToken(t, "web")); err != nil || m.GetWelcome() == nil {
		t.Fatalf("hello: %v, %v; want welcome", m, err)
	}
	k.waitStatus(t, "web-2", store.SoulConnected)
	// As the API's reject does.
	if err := k.store.SetSoulStatus(context.Background(), "web-2", store.SoulRejected, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if !k.gw.Disconnect("web-2", "rejected by an Archon") {
		t.Fatal("no session to disconnect")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's end was not recorded")
	}
	if s := k.soul(t, "web-2"); s.Status != store.SoulRejected {
		t.Fatalf("soul = %+v, want still rejected", s)
	}
}
