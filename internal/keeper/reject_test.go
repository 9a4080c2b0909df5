package keeper_test

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestRejectOnOtherKeeper: rejecting, through keeper-1's API, a soul
// whose stream keeper-2 holds closes that stream (keeper-1 tells keeper-2
// through its relay channel), and the soul stays out.
func TestRejectOnOtherKeeper(t *testing.T) {
	c := startTwoKeepers(t, false)
	c.startSoul("soul-b", 1)
	if !c.keepers[1].Gateway().Connected("soul-b") {
		t.Fatal("soul-b is not connected to keeper-2")
	}
	s, err := c.clients[0].RejectSoul(c.ctx, "soul-b")
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != store.SoulRejected {
		t.Fatalf("rejected soul's status: %s", s.Status)
	}
	testutil.WaitFor(t, 5*time.Second, func() bool { return !c.keepers[1].Gateway().Connected("soul-b") },
		"keeper-2 to close rejected soul-b's stream")
	time.Sleep(time.Second) // the soul retries; its hellos are refused
	if c.keepers[1].Gateway().Connected("soul-b") || c.keepers[0].Gateway().Connected("soul-b") {
		t.Fatal("the rejected soul is connected again")
	}
}
