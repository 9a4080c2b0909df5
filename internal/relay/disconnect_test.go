package relay_test

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/testutil/pgtest"
)

// TestDisconnect: a soul's stream is closed wherever it is held: on this
// keeper through its gateway, on another keeper by telling it, whose relay
// closes it through its own gateway.
func TestDisconnect(t *testing.T) {
	dbURL := pgtest.FreshDatabase(t)
	k1 := startKeeper(t, dbURL, "k1", "a")
	k2 := startKeeper(t, dbURL, "k2", "b", "c")
	ctx := t.Context()

	if !k1.r.Disconnect(ctx, "a", "k1", "test") || k1.gw.Connected("a") {
		t.Fatal("a soul held here was not disconnected")
	}
	if !k1.r.Disconnect(ctx, "b", "k2", "test") {
		t.Fatal("Disconnect of a soul held by k2 did not tell k2")
	}
	waitFor(t, 10*time.Second, func() bool { return !k2.gw.Connected("b") }, "k2 to close b's stream")
	if !k2.gw.Connected("c") {
		t.Fatal("k2 closed another soul's stream too")
	}
	// Nobody to tell: no holder, or this keeper (which does not hold it).
	if k1.r.Disconnect(ctx, "c", "", "test") || k1.r.Disconnect(ctx, "c", "k1", "test") {
		t.Fatal("Disconnect reported a stream closed with no other keeper holding it")
	}
	time.Sleep(200 * time.Millisecond)
	if !k2.gw.Connected("c") {
		t.Fatal("c's stream on k2 was closed without k2 being named its holder")
	}
}
