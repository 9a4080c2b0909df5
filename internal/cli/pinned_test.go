package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/store"
)

// TestM3ShowsThePinnedCommit: audit M3 — `service show` lists the commit
// each incarnation actually runs, marking one pinned elsewhere than the
// service's ref (what an upgrade to another ref did, unseen before), and
// `incarnation show` prints its pinned commit in full.
func TestM3ShowsThePinnedCommit(t *testing.T) {
	k := startKeeper(t)
	repo := catalogtest.NewRepo(t)
	commit := repo.Commit(catalogtest.MyService, "my-service")
	k.ctl(t, "service", "register", "--name", "my-service", "--git", repo.Dir, "--ref", "master").must(t)
	other := strings.Repeat("ab", 20)
	run := store.Run{ID: "evil-create", Scenario: "create"}
	if err := k.K.Store().CreateIncarnation(context.Background(), store.Incarnation{Name: "evil-dev", Service: "my-service",
		Ref: "unreviewed", Commit: other}, run); err != nil {
		t.Fatal(err)
	}
	out := k.ctl(t, "service", "show", "my-service").must(t).Stdout
	if !strings.Contains(out, "Commit:") || !strings.Contains(out, commit) {
		t.Errorf("service show lacks the service's commit:\n%s", out)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "evil-dev") {
			line = l
		}
	}
	if !strings.Contains(line, "unreviewed") || !strings.Contains(line, other) || !strings.Contains(line, "not the service's commit") {
		t.Errorf("service show does not show evil-dev's pinned commit:\n%s", out)
	}
	inc := k.ctl(t, "incarnation", "show", "evil-dev").must(t).Stdout
	if !strings.Contains(inc, "Pinned commit:") || !strings.Contains(inc, other) {
		t.Errorf("incarnation show lacks the pinned commit:\n%s", inc)
	}
}
