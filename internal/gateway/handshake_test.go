package gateway_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/gateway"
	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/tlsutil"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
	"github.com/soulstack/soulstack/proto/soulstack/v1/soulstackv1connect"
)

// rawSoul is a hand-driven soul stream: the tests send what a real soul
// would not.
type rawSoul struct {
	t      *testing.T
	k      *keeper
	key    ed25519.PrivateKey
	stream rawStream
}

// rawStream is the soul's side of a stream: the Connect client over HTTP/2
// (dialRaw) or the lean soulstack/1 connection (dialLean).
type rawStream interface {
	Send(*pb.SoulMessage) error
	Receive() (*pb.KeeperMessage, error)
	CloseRequest() error
	CloseResponse() error
}

func dialRaw(t *testing.T, k *keeper, opts ...connect.ClientOption) *rawSoul {
	t.Helper()
	tlsCfg, err := tlsutil.PinnedClientConfig(k.fp)
	if err != nil {
		t.Fatal(err)
	}
	protos := new(http.Protocols)
	protos.SetHTTP2(true)
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, Protocols: protos}
	t.Cleanup(tr.CloseIdleConnections)
	cl := soulstackv1connect.NewSoulServiceClient(&http.Client{Transport: tr}, k.url,
		append([]connect.ClientOption{connect.WithGRPC(), connect.WithSendMaxBytes(gateway.MaxMessageBytes)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	st := cl.Connect(ctx)
	t.Cleanup(func() { _ = st.CloseRequest(); _ = st.CloseResponse() })
	return &rawSoul{t: t, k: k, key: key, stream: st}
}

// handshake says hello as sid with soulprint and answers the challenge; it
// returns the keeper's answer after the proof (or the stream's error).
func (r *rawSoul) handshake(sid string, soulprint []byte, joinToken string) (*pb.KeeperMessage, error) {
	hello := &pb.Hello{Sid: sid, PublicKey: r.key.Public().(ed25519.PublicKey), Version: "test", Soulprint: soulprint}
	if joinToken != "" {
		secret, _, err := jointoken.Decode(joinToken)
		if err != nil {
			r.t.Fatal(err)
		}
		hello.JoinSecret = secret
	}
	if err := r.stream.Send(&pb.SoulMessage{Msg: &pb.SoulMessage_Hello{Hello: hello}}); err != nil {
		return nil, err
	}
	m, err := r.stream.Receive()
	if err != nil {
		return nil, err
	}
	ch := m.GetChallenge()
	if ch == nil {
		return m, nil
	}
	sig := ed25519.Sign(r.key, pb.ProofPayload(ch.Nonce, sid, r.k.fp))
	if err := r.stream.Send(&pb.SoulMessage{Msg: &pb.SoulMessage_Proof{Proof: &pb.Proof{Signature: sig}}}); err != nil {
		return nil, err
	}
	return r.stream.Receive()
}

// An unauthenticated hello may not make the keeper hold a message of up to
// MaxMessageBytes: the handshake has a budget of MaxHandshakeBytes, and a
// compressed stream (a small gzip bomb inflating to MaxMessageBytes) is
// refused outright. A soul, once accepted, may send large messages again.
func TestHandshakeIsSmall(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})

	big := []byte(`{"pad":"` + strings.Repeat("x", 2*gateway.MaxHandshakeBytes) + `"}`)
	if m, err := dialRaw(t, k).handshake("bloated", big, ""); err == nil {
		t.Fatalf("a %d-byte hello was answered: %v", len(big), m)
	}
	if _, err := k.store.GetSoul(context.Background(), "bloated"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the bloated hello registered a soul: %v", err)
	}

	small := []byte(`{"pad":"` + strings.Repeat("x", 8<<10) + `"}`)
	if m, err := dialRaw(t, k, connect.WithSendGzip()).handshake("zipped", small, ""); err == nil {
		t.Fatalf("a compressed stream was answered: %v", m)
	}
	if _, err := k.store.GetSoul(context.Background(), "zipped"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the compressed hello registered a soul: %v", err)
	}

	// An accepted soul's later messages are not held to the budget.
	r := dialRaw(t, k)
	m, err := r.handshake("roomy", []byte(`{"os":{"family":"debian"}}`), k.joinToken(t, "web"))
	if err != nil || m.GetWelcome() == nil {
		t.Fatalf("handshake of roomy: %v, %v", m, err)
	}
	k.waitConnected(t, "roomy")
	if err := r.stream.Send(&pb.SoulMessage{Msg: &pb.SoulMessage_Soulprint{Soulprint: &pb.SoulprintUpdate{Soulprint: big}}}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool {
		s, err := k.store.GetSoul(context.Background(), "roomy")
		return err == nil && s.Soulprint["pad"] != nil
	}, "the large soulprint update of an accepted soul")
}

// A pending record binds nothing: a soul with a valid join token takes
// the SID over from whoever said hello first under another key (audited);
// without a token the first key stands.
func TestJoinTokenReclaimsPendingSID(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	squatter := dialRaw(t, k)
	if m, err := squatter.handshake("web-9", nil, ""); err != nil || m.GetPending() == nil {
		t.Fatalf("squatter: %v, %v", m, err)
	}
	other := dialRaw(t, k)
	if m, err := other.handshake("web-9", nil, ""); err != nil || m.GetRejected().GetReason() != pb.Rejected_REASON_KEY_MISMATCH {
		t.Fatalf("a second key without a token: %v, %v; want a key mismatch", m, err)
	}

	real := dialRaw(t, k)
	if m, err := real.handshake("web-9", nil, k.joinToken(t, "web")); err != nil || m.GetWelcome() == nil {
		t.Fatalf("the soul with the join token: %v, %v; want welcome", m, err)
	}
	k.waitConnected(t, "web-9")
	s := k.soul(t, "web-9")
	if !ed25519.PublicKey(s.PublicKey).Equal(real.key.Public()) || strings.Join(s.Covens, ",") != "web" {
		t.Fatalf("soul = %+v, want the token holder's key and covens", s)
	}
	audit, err := k.store.ListAudit(context.Background(), store.AuditFilter{Action: "soul.pending_key_replaced"})
	if err != nil || len(audit) != 1 || audit[0].Target != "web-9" {
		t.Fatalf("audit = %+v, %v", audit, err)
	}

	again := dialRaw(t, k)
	again.key = squatter.key
	if m, err := again.handshake("web-9", nil, ""); err != nil || m.GetRejected().GetReason() != pb.Rejected_REASON_KEY_MISMATCH {
		t.Fatalf("the squatter after the takeover: %v, %v; want a key mismatch", m, err)
	}
}

// Hellos of one new SID under different keys at once: exactly one
// registers it; the others are refused, never silently rebinding the key.
func TestConcurrentHellosOfOneSID(t *testing.T) {
	dir := t.TempDir()
	// 15 of the hellos fail by design: the source's failure budget (L1)
	// is not what this test is about.
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{quiet: true, helloBurst: 100})
	const n = 16
	souls := make([]*rawSoul, n)
	for i := range souls {
		souls[i] = dialRaw(t, k)
	}
	type answer struct {
		m   *pb.KeeperMessage
		err error
	}
	answers := make(chan answer, n)
	start := make(chan struct{})
	for _, r := range souls {
		go func() {
			<-start
			m, err := r.handshake("contested", nil, "")
			answers <- answer{m, err}
		}()
	}
	close(start)
	pending := 0
	for range n {
		a := <-answers
		switch {
		case a.err != nil:
			t.Errorf("handshake: %v", a.err)
		case a.m.GetPending() != nil:
			pending++
		case a.m.GetRejected().GetReason() != pb.Rejected_REASON_KEY_MISMATCH:
			t.Errorf("answer %v, want pending or a key mismatch", a.m)
		}
	}
	if pending != 1 {
		t.Fatalf("%d of %d hellos registered the SID, want exactly 1", pending, n)
	}
}

// A join token limited to one use lets one soul in; the next soul
// presenting it waits as pending, as does any soul after its revocation.
func TestJoinTokenUseLimitAndRevocation(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	ctx := context.Background()
	secret, err := jointoken.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.store.CreateJoinToken(ctx, store.JoinToken{ID: "once", SecretHash: jointoken.Hash(secret), Covens: []string{"web"},
		ExpiresAt: time.Now().Add(time.Hour), MaxUses: 1}); err != nil {
		t.Fatal(err)
	}
	once := jointoken.Encode(secret, k.fp)
	if m, err := dialRaw(t, k).handshake("first", nil, once); err != nil || m.GetWelcome() == nil {
		t.Fatalf("first use: %v, %v; want welcome", m, err)
	}
	if m, err := dialRaw(t, k).handshake("second", nil, once); err != nil || m.GetPending().GetReason() != "the join token used up (1 of 1 uses); waiting for an Archon to accept this soul" {
		t.Fatalf("second use of a one-use token: %v, %v; want pending", m, err)
	}
	open := k.joinToken(t, "db")
	list, err := k.store.ListJoinTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, jt := range list {
		if err := k.store.RevokeJoinToken(ctx, jt.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := dialRaw(t, k).handshake("third", nil, open); err != nil || !strings.HasPrefix(m.GetPending().GetReason(), "the join token revoked at ") {
		t.Fatalf("use of a revoked token: %v, %v; want pending", m, err)
	}
	if s := k.soul(t, "second"); s.Status != store.SoulPending || len(s.Covens) != 0 {
		t.Fatalf("second = %+v, want pending without covens", s)
	}
}

// interleaved is a store whose GetSoul runs between(sid) once, right after
// its first read of sid: what another keeper or an Archon writes between
// the gateway's read of a soul and its write.
type interleaved struct {
	store.Store
	once    sync.Once
	between func(sid string)
}

func (s *interleaved) GetSoul(ctx context.Context, sid string) (store.Soul, error) {
	so, err := s.Store.GetSoul(ctx, sid)
	s.once.Do(func() { s.between(sid) })
	return so, err
}

// Another keeper on the same database registers a new SID between this
// keeper's read (not found) and its write: the first registration stands
// (its key, its status) and this hello is decided against it.
func TestFirstHellosRaceAcrossKeepers(t *testing.T) {
	dir := t.TempDir()
	var st store.Store
	_, otherKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{wrap: func(s store.Store) store.Store {
		st = s
		return &interleaved{Store: s, between: func(sid string) {
			err := st.CreateSoul(context.Background(), store.Soul{SID: sid, PublicKey: otherKey.Public().(ed25519.PublicKey),
				Status: store.SoulDisconnected, Covens: []string{"db"}, KeeperID: "keeper-2", LastSeen: time.Now()})
			if err != nil {
				t.Error(err)
			}
		}}
	}})
	m, err := dialRaw(t, k).handshake("raced", nil, k.joinToken(t, "web"))
	if err != nil || m.GetRejected().GetReason() != pb.Rejected_REASON_KEY_MISMATCH {
		t.Fatalf("the second registration of a SID: %v, %v; want a key mismatch", m, err)
	}
	s := k.soul(t, "raced")
	if !ed25519.PublicKey(s.PublicKey).Equal(otherKey.Public()) || s.Status != store.SoulDisconnected || strings.Join(s.Covens, ",") != "db" {
		t.Fatalf("soul = %+v, want the first registration's key, status and covens", s)
	}
}

// An Archon accepts a pending soul while its hello, carrying a new
// version, is being decided: the hello records the version and leaves the
// acceptance alone.
func TestHelloKeepsConcurrentAccept(t *testing.T) {
	dir := t.TempDir()
	var st store.Store
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{wrap: func(s store.Store) store.Store {
		st = s
		return &interleaved{Store: s, between: func(sid string) {
			if err := st.SetSoulCovens(context.Background(), sid, []string{"web"}); err != nil {
				t.Error(err)
			}
			if err := st.SetSoulStatus(context.Background(), sid, store.SoulDisconnected, "", time.Now()); err != nil {
				t.Error(err)
			}
		}}
	}})
	r := dialRaw(t, k)
	if err := k.store.CreateSoul(context.Background(), store.Soul{SID: "waiting", PublicKey: r.key.Public().(ed25519.PublicKey),
		Status: store.SoulPending, Version: "0.9", LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if m, err := r.handshake("waiting", nil, ""); err != nil || m.GetPending() == nil {
		t.Fatalf("hello: %v, %v; want pending (as read before the accept)", m, err)
	}
	s := k.soul(t, "waiting")
	if s.Status != store.SoulDisconnected || strings.Join(s.Covens, ",") != "web" || s.Version != "test" {
		t.Fatalf("soul = %+v, want accepted into web with version test", s)
	}
}

// An Archon rejects a SID pending under one key while a soul with a join
// token and another key takes it over: the rejection stands, and the soul
// is refused when it tries again.
func TestReclaimKeepsConcurrentReject(t *testing.T) {
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
	_, squatter, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.store.CreateSoul(context.Background(), store.Soul{SID: "web-9", PublicKey: squatter.Public().(ed25519.PublicKey),
		Status: store.SoulPending, LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
	token := k.joinToken(t, "web")
	if m, err := dialRaw(t, k).handshake("web-9", nil, token); err == nil && m.GetWelcome() != nil {
		t.Fatalf("the takeover of a SID rejected meanwhile was welcomed: %v", m)
	}
	s := k.soul(t, "web-9")
	if s.Status != store.SoulRejected || !ed25519.PublicKey(s.PublicKey).Equal(squatter.Public()) {
		t.Fatalf("soul = %+v, want rejected under the squatter's key", s)
	}
	if m, err := dialRaw(t, k).handshake("web-9", nil, token); err != nil || m.GetRejected().GetReason() != pb.Rejected_REASON_REJECTED {
		t.Fatalf("the next hello: %v, %v; want rejected", m, err)
	}
}

// Anyone who reaches the port can register a pending soul per SID: their
// number is bounded. Beyond MaxPending a new soul without a token is told
// to retry and not recorded; souls with a join token still join.
func TestPendingSoulsAreBounded(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{maxPending: 2})
	for _, sid := range []string{"p1", "p2"} {
		if m, err := dialRaw(t, k).handshake(sid, nil, ""); err != nil || m.GetPending() == nil {
			t.Fatalf("%s: %v, %v; want pending", sid, m, err)
		}
	}
	m, err := dialRaw(t, k).handshake("p3", nil, "")
	if err != nil || !strings.Contains(m.GetPending().GetReason(), "too many souls") {
		t.Fatalf("p3: %v, %v; want told to retry", m, err)
	}
	if _, err := k.store.GetSoul(context.Background(), "p3"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("p3 was registered beyond the bound: %v", err)
	}
	if m, err := dialRaw(t, k).handshake("j1", nil, k.joinToken(t, "web")); err != nil || m.GetWelcome() == nil {
		t.Fatalf("a soul with a join token: %v, %v; want welcome", m, err)
	}
	// Once an Archon decided on one, there is room again.
	if err := k.store.SetSoulStatus(context.Background(), "p1", store.SoulRejected, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if m, err := dialRaw(t, k).handshake("p3", nil, ""); err != nil || m.GetPending().GetReason() == "" || strings.Contains(m.GetPending().GetReason(), "too many") {
		t.Fatalf("p3 after a rejection: %v, %v; want pending", m, err)
	}
}

// A pending soul logs the fingerprint of its key: what the Archon gives to
// souls accept --key, and what the keeper computes from the stored key.
func TestPendingSoulLogsItsKey(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	p := startSoul(t, k, "waiting-1", filepath.Join(dir, "soul"), "--fingerprint", k.fp)
	k.waitStatus(t, "waiting-1", store.SoulPending)
	want := "key=" + domain.KeyFingerprint(k.soul(t, "waiting-1").PublicKey)
	testutil.WaitFor(t, 10*time.Second, func() bool { return strings.Contains(p.Output(), want) }, "the soul to log %s", want)
}
