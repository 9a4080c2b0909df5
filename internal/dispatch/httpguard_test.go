package dispatch_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/netguard"
)

// TestM2KeeperSideHTTPRequestRefusesLoopback reproduces audit finding M2:
// an on: keeper core.http.request to a loopback "metadata" service. With
// the default policy the request fails at connect time and the body never
// reaches the result; once the config's http.allow names the address, the
// same task works.
func TestM2KeeperSideHTTPRequestRefusesLoopback(t *testing.T) {
	meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"AccessKeyId":"AKIAFAKEKEEPERHOST"}`)
	}))
	defer meta.Close()
	work := dispatch.Work{Call: &dispatch.Call{Module: "core.http.request", Params: map[string]any{"url": meta.URL + "/latest/meta-data/iam.json"}}}
	run := func(l *dispatch.Local) (failed bool, msg, stdout string) {
		r := l.Dispatch(context.Background(), []dispatch.Request{{SID: dispatch.KeeperSID, Work: work}}, nil)[dispatch.KeeperSID]
		return r.Failed, r.Msg, r.Stdout
	}
	failed, msg, stdout := run(&dispatch.Local{})
	if !failed || !strings.Contains(msg, "http.allow") || strings.Contains(stdout, "AKIA") {
		t.Fatalf("default policy: failed=%v msg=%q stdout=%q, want refused", failed, msg, stdout)
	}
	allow, err := netguard.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	failed, msg, stdout = run(&dispatch.Local{HTTP: allow})
	if failed || !strings.Contains(stdout, "AKIA") {
		t.Fatalf("http.allow [127.0.0.1]: failed=%v msg=%q stdout=%q, want the body", failed, msg, stdout)
	}
}

// TestKeeperSideWaitPort: the docs say core.wait.port runs on the Keeper
// (on: keeper); the Keeper refused it outright. It now runs there, through
// the same http.allow policy as core.http.request (audit M2): a loopback
// port is refused by default — at once, and never reported "stopped" —
// and reachable once http.allow names the address.
func TestKeeperSideWaitPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	run := func(l *dispatch.Local, state string) (bool, string) {
		work := dispatch.Work{Call: &dispatch.Call{Module: "core.wait.port", Params: map[string]any{"host": "127.0.0.1", "port": int64(p), "state": state, "timeout": int64(5)}}}
		r := l.Dispatch(context.Background(), []dispatch.Request{{SID: dispatch.KeeperSID, Work: work}}, nil)[dispatch.KeeperSID]
		return r.Failed, r.Msg
	}
	for _, state := range []string{"started", "stopped"} {
		if failed, msg := run(&dispatch.Local{}, state); !failed || !strings.Contains(msg, "http.allow") {
			t.Fatalf("default policy, state %s: failed=%v msg=%q, want refused naming http.allow", state, failed, msg)
		}
	}
	allow, err := netguard.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if failed, msg := run(&dispatch.Local{HTTP: allow}, "started"); failed {
		t.Fatalf("http.allow [127.0.0.1]: failed: %s", msg)
	}
}
