package soul

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSplitKeeperURLs(t *testing.T) {
	got := SplitKeeperURLs("https://a:8080/", "https://b:8080,https://c:8080", " https://d:8080  https://a:8080\thttps://e ", "")
	want := []string{"https://a:8080", "https://b:8080", "https://c:8080", "https://d:8080", "https://e"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("SplitKeeperURLs (-want +got):\n%s", diff)
	}
}

// A name stands for every address it resolves to; literal IPs are
// themselves; a name that does not resolve is kept for the dial to
// report; duplicates go.
func TestEndpointsResolveEveryAddress(t *testing.T) {
	dir := t.TempDir()
	a, err := NewAgent(Config{
		KeeperURLs: []string{"https://keepers.example:8080", "https://10.0.0.9:8080", "https://gone.example:9", "https://10.0.0.2:8080"},
		SID:        "s", DataDir: dir, Fingerprint: strings.Repeat("a", 64),
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "keepers.example" {
				return []netip.Addr{netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("::ffff:10.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range a.endpoints(context.Background()) {
		got = append(got, e.addr+" "+e.t.tls.ServerName)
	}
	want := []string{
		"10.0.0.1:8080 keepers.example",
		"10.0.0.2:8080 keepers.example",
		"10.0.0.3:8080 keepers.example",
		"10.0.0.9:8080 10.0.0.9",
		"gone.example:9 gone.example",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("endpoints (-want +got):\n%s", diff)
	}
}

func TestNewAgentNeedsAKeeper(t *testing.T) {
	_, err := NewAgent(Config{SID: "s", DataDir: t.TempDir(), Fingerprint: strings.Repeat("a", 64)})
	if err == nil || !strings.Contains(err.Error(), "keeper URL is required") {
		t.Fatalf("err = %v, want a keeper URL is required", err)
	}
	_, err = NewAgent(Config{KeeperURLs: []string{"https://a:1", "http://b:1"}, SID: "s", DataDir: t.TempDir(), Fingerprint: strings.Repeat("a", 64)})
	if err == nil || !strings.Contains(err.Error(), `"http://b:1" must be https`) {
		t.Fatalf("err = %v, want http://b:1 must be https", err)
	}
}

// The picker spreads over the addresses not avoided, and when all are
// avoided names the one free soonest and how long to wait for it.
func TestPicker(t *testing.T) {
	eps := []endpoint{{addr: "a:1"}, {addr: "b:1"}, {addr: "c:1"}}
	now := time.Unix(1000, 0)
	var p picker
	seen := map[string]int{}
	for range 300 {
		e, wait := p.pick(eps, now)
		if wait != 0 {
			t.Fatalf("wait %s with free endpoints", wait)
		}
		seen[e.addr]++
	}
	for _, e := range eps {
		if seen[e.addr] < 50 {
			t.Errorf("endpoint %s picked %d times of 300: not spread", e.addr, seen[e.addr])
		}
	}
	p.shun("a:1", time.Minute, now)
	for range 100 {
		if e, _ := p.pick(eps, now); e.addr == "a:1" {
			t.Fatal("picked an avoided endpoint while others are free")
		}
	}
	p.shun("b:1", 10*time.Second, now)
	p.shun("c:1", 20*time.Second, now)
	p.shun("b:1", time.Second, now) // a shorter avoidance does not shorten a longer one
	e, wait := p.pick(eps, now)
	if e.addr != "b:1" || wait != 10*time.Second {
		t.Fatalf("pick = %s after %s, want b:1 after 10s", e.addr, wait)
	}
	if e, wait := p.pick(eps, now.Add(15*time.Second)); e.addr != "b:1" || wait != 0 {
		t.Fatalf("pick after 15s = %s after %s, want b:1 at once", e.addr, wait)
	}
}
