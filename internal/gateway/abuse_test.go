package gateway_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/gateway"
	"github.com/soulstack/soulstack/internal/soul"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// TestL1FailedHellosRateLimitedAndAggregated reproduces audit finding L1:
// 30 hellos as a known SID with fresh keys from one client. Only the
// source's budget of them is acted on (the rest are refused once their
// key proves not to be the bound one); the audit log gets one full
// soul.key_mismatch entry and one soul.hello_failures entry counting all
// 30, not 30 rows. Once its budget refills, the source is served again.
// Both transports share the budget's rules.
func TestL1FailedHellosRateLimitedAndAggregated(t *testing.T) {
	forTransports(t, testL1FailedHellos)
}

// transports are the two ways a soul stream arrives: lean and Connect.
var transports = []struct {
	name string
	dial func(*testing.T, *keeper) *rawSoul
}{
	{"lean", dialLean},
	{"h2", func(t *testing.T, k *keeper) *rawSoul { return dialRaw(t, k) }},
}

// forTransports runs test once per transport as subtests.
func forTransports(t *testing.T, test func(t *testing.T, dial func(*testing.T, *keeper) *rawSoul)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { test(t, tr.dial) })
	}
}

func testL1FailedHellos(t *testing.T, dialRaw func(*testing.T, *keeper) *rawSoul) {
	dir := t.TempDir()
	const burst = 5
	const refill = 500 * time.Millisecond
	const window = 2 * time.Second
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{helloBurst: burst, helloRefill: refill, helloWindow: window})
	owner := dialRaw(t, k)
	if m, err := owner.handshake("dev-soul-2", nil, k.joinToken(t, "web")); err != nil || m.GetWelcome() == nil {
		t.Fatalf("owner handshake: %v %v", m, err)
	}
	k.waitConnected(t, "dev-soul-2")

	mismatches, refused := 0, 0
	start := time.Now()
	for range 30 {
		m, err := dialRaw(t, k).handshake("dev-soul-2", nil, "")
		switch {
		case err == nil && m.GetRejected().GetReason() == pb.Rejected_REASON_KEY_MISMATCH:
			mismatches++
		case err != nil: // resource_exhausted, or the stream closed before the hello was written
			refused++
		default:
			t.Fatalf("hello answered %v, %v", m, err)
		}
	}
	// The loop takes a few ms per hello (more on a loaded machine): the
	// tokens that refilled meanwhile may be spent too, and no more.
	elapsed := time.Since(start)
	refilled := int(elapsed / refill)
	windows := 1 + int(elapsed/window) // the hellos may straddle windows on a loaded machine
	if mismatches < burst || mismatches > burst+refilled+1 || refused != 30-mismatches {
		t.Fatalf("%d key mismatches and %d refused, want about %d read and the rest refused", mismatches, refused, burst)
	}
	ctx := context.Background()
	full, err := k.store.ListAudit(ctx, store.AuditFilter{Action: "soul.key_mismatch"})
	if err != nil || len(full) < 1 || len(full) > windows {
		t.Fatalf("soul.key_mismatch entries = %d (%v), want one per window (%d)", len(full), err, windows)
	}
	var agg []store.AuditEntry
	testutil.WaitFor(t, 10*time.Second, func() bool {
		agg, err = k.store.ListAudit(ctx, store.AuditFilter{Action: gateway.ActionHelloFailures})
		return err == nil && len(agg) > 0
	}, "the aggregated failed-hello entry")
	// On a loaded machine the 30 hellos may straddle two windows: then
	// there is one entry per window, and together they count all 30.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		agg, err = k.store.ListAudit(ctx, store.AuditFilter{Action: gateway.ActionHelloFailures})
		count := 0
		for _, e := range agg {
			count += toInt(e.Summary["count"])
		}
		return err == nil && count >= 30
	}, "aggregated entries counting all 30 hellos")
	count, refusedAgg := 0, 0
	for _, e := range agg {
		if e.Target != "127.0.0.1" {
			t.Fatalf("aggregated entry for %q: %+v", e.Target, e)
		}
		count += toInt(e.Summary["count"])
		refusedAgg += toInt(e.Summary["refused"])
	}
	if len(agg) > windows || count != 30 || refusedAgg != refused {
		t.Fatalf("aggregated entries = %+v", agg)
	}

	// The budget refills: a good soul from the same address joins.
	time.Sleep(2 * refill)
	if m, err := dialRaw(t, k).handshake("good-soul", nil, k.joinToken(t, "web")); err != nil || m.GetWelcome() == nil {
		t.Fatalf("good soul after the refill: %v %v", m, err)
	}
	if got := k.soul(t, "dev-soul-2"); string(got.PublicKey) != string(owner.key.Public().(ed25519.PublicKey)) {
		t.Fatal("the bound soul's key changed")
	}
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return -1
}

// TestI8SoulMessageLimit: an accepted soul's message beyond the
// configured limit ends its stream (audit note I8: 60 MiB log lines were
// read); one under the limit is fine.
func TestI8SoulMessageLimit(t *testing.T) {
	forTransports(t, testI8SoulMessageLimit)
}

func testI8SoulMessageLimit(t *testing.T, dialRaw func(*testing.T, *keeper) *rawSoul) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{maxSoulMessage: 256 << 10})
	r := dialRaw(t, k)
	if m, err := r.handshake("chatty", nil, k.joinToken(t, "web")); err != nil || m.GetWelcome() == nil {
		t.Fatalf("handshake: %v %v", m, err)
	}
	k.waitConnected(t, "chatty")
	line := func(n int) *pb.SoulMessage {
		return &pb.SoulMessage{Msg: &pb.SoulMessage_Log{Log: &pb.LogLine{TaskId: "t", Level: "info", Text: strings.Repeat("x", n)}}}
	}
	if err := r.stream.Send(line(100 << 10)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if !k.gw.Connected("chatty") {
		t.Fatal("a 100 KiB log line ended the session")
	}
	_ = r.stream.Send(line(1 << 20))
	testutil.WaitFor(t, 10*time.Second, func() bool { return !k.gw.Connected("chatty") }, "the session ended by a 1 MiB message")
	if gateway.DefaultMaxSoulMessageBytes >= gateway.MaxMessageBytes {
		t.Fatalf("default soul message limit %d is not below the old 64 MiB", gateway.DefaultMaxSoulMessageBytes)
	}
}

// TestN1BoundSoulServedWhileSourceLimited reproduces audit finding N1:
// bad hellos claiming host-1 from the soul's own address spent the
// address's budget, and the real host-1 (a real soul process with its
// bound key) was then refused until the budget refilled. A hello that
// proves the bound key is always served; the limit still refuses what the
// attacker causes (unknown keys, registrations, audit rows). The budget
// never refills during the test (one token an hour), so nothing here
// depends on timing.
func TestN1BoundSoulServedWhileSourceLimited(t *testing.T) {
	dir := t.TempDir()
	const burst = 5
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{helloBurst: burst, helloRefill: time.Hour, helloWindow: time.Hour})
	soulDir := filepath.Join(dir, "host-1")
	p := startSoul(t, k, "host-1", soulDir, "--join-token", k.joinToken(t, "web"))
	k.waitConnected(t, "host-1")
	p.Kill()
	testutil.WaitFor(t, 10*time.Second, func() bool { return !k.gw.Connected("host-1") }, "host-1 disconnected")

	refused := 0
	for range 15 {
		m, err := dialRaw(t, k).handshake("host-1", nil, "")
		switch {
		case err == nil && m.GetRejected().GetReason() == pb.Rejected_REASON_KEY_MISMATCH:
		case err != nil:
			refused++
		default:
			t.Fatalf("hello answered %v, %v", m, err)
		}
	}
	if refused != 15-burst {
		t.Fatalf("%d of 15 bad hellos refused, want %d: the source must be over its budget", refused, 15-burst)
	}

	// The real soul comes back from the same address, with its key: it is
	// served at once, again and again.
	for i := range 3 {
		p = startSoul(t, k, "host-1", soulDir, "--fingerprint", k.fp)
		k.waitConnected(t, "host-1")
		p.Kill()
		testutil.WaitFor(t, 10*time.Second, func() bool { return !k.gw.Connected("host-1") }, "host-1 disconnected (%d)", i)
	}
	// A raw stream with the bound key, on both transports, too.
	for _, tr := range transports {
		r := tr.dial(t, k)
		r.key = ownerKey(t, soulDir)
		if m, err := r.handshake("host-1", nil, ""); err != nil || m.GetWelcome() == nil {
			t.Fatalf("%s: the bound soul was not served while its address is limited: %v %v", tr.name, m, err)
		}
		_ = r.stream.CloseRequest()
		testutil.WaitFor(t, 10*time.Second, func() bool { return !k.gw.Connected("host-1") }, "host-1 disconnected (%s)", tr.name)
	}

	// The limit still holds for everything else: a new SID, even with a
	// valid join token, and a fresh key for host-1 are refused, and write
	// nothing.
	if m, err := dialRaw(t, k).handshake("newcomer", nil, k.joinToken(t, "web")); err == nil {
		t.Fatalf("a newcomer from a limited source was served: %v", m)
	}
	if _, err := k.store.GetSoul(context.Background(), "newcomer"); err == nil {
		t.Fatal("a limited source registered a soul")
	}
	if m, err := dialRaw(t, k).handshake("host-1", nil, ""); err == nil {
		t.Fatalf("a fresh key for host-1 from a limited source was answered: %v", m)
	}
	full, err := k.store.ListAudit(context.Background(), store.AuditFilter{Action: "soul.key_mismatch"})
	if err != nil || len(full) != 1 {
		t.Fatalf("soul.key_mismatch entries = %d (%v), want 1", len(full), err)
	}
}

// ownerKey reads the soul's private key from its data dir.
func ownerKey(t *testing.T, dir string) ed25519.PrivateKey {
	t.Helper()
	key, err := soul.LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestJoinAudited: a soul (a real process) that joins with a join token
// leaves an audit entry naming the token by its id, never its secret.
func TestJoinAudited(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	tok := k.joinToken(t, "web")
	startSoul(t, k, "joiner", filepath.Join(dir, "joiner"), "--join-token", tok)
	k.waitConnected(t, "joiner")
	es, err := k.store.ListAudit(context.Background(), store.AuditFilter{Action: gateway.ActionSoulJoined})
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := k.store.ListJoinTokens(context.Background())
	byID := map[string]bool{}
	for _, jt := range ids {
		byID[jt.ID] = true
	}
	got := map[string]string{}
	for _, e := range es {
		id, _ := e.Summary["join_token"].(string)
		if !byID[id] {
			t.Errorf("entry %+v does not name a join token by its id", e)
		}
		got[e.Target] = id
		all := fmt.Sprint(e.Summary)
		for _, secret := range []string{tok} {
			if strings.Contains(all, secret) {
				t.Errorf("the audit entry holds the join token: %v", all)
			}
		}
	}
	if len(got) != 1 || got["joiner"] == "" {
		t.Fatalf("soul.joined entries = %+v", es)
	}
}
