package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/api"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/testutil"
)

// TestHandlerPanicIsA500 (SPEC §14): a panic in a handler is answered 500
// with the API's JSON error naming the request id, never a dropped
// connection; it is logged at error level with that request id and the
// stack, and the access log names the request id and the client address.
func TestHandlerPanicIsA500(t *testing.T) {
	e := newEnv(t)
	logs := &testutil.Buffer{}
	s, err := api.New(api.Config{Store: e.st, Auth: e.auth, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Mount("GET /boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		var m map[string]int
		m["x"]++ // a nil map write: a real runtime panic
	}))
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	for _, sent := range []string{"", "req-42.a"} {
		req, _ := http.NewRequest("GET", srv.URL+"/boom", nil)
		if sent != "" {
			req.Header.Set(api.RequestIDHeader, sent)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("request id %q: connection dropped: %v", sent, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := resp.Header.Get(api.RequestIDHeader)
		if sent != "" && id != sent {
			t.Errorf("request id %q answered as %q", sent, id)
		}
		if id == "" {
			t.Fatal("no request id in the answer")
		}
		var eb apitypes.ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil || resp.StatusCode != 500 || eb.Error.Code != "internal" || !strings.Contains(eb.Error.Message, id) {
			t.Errorf("answer %d %s (%v), want 500 internal naming request %s", resp.StatusCode, b, err, id)
		}
		var panicLogged, accessLogged bool
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if rec["request_id"] != id {
				continue
			}
			switch rec["msg"] {
			case "panic serving a request":
				panicLogged = rec["level"] == "ERROR" && strings.Contains(rec["panic"].(string), "nil map") &&
					strings.Contains(rec["stack"].(string), "recover_test.go")
			case "http request":
				accessLogged = rec["status"] == float64(500) && strings.HasPrefix(rec["client"].(string), "127.0.0.1:")
			}
		}
		if !panicLogged || !accessLogged {
			t.Errorf("request %s: panic logged at error level with stack %v, access log with status and client %v; logs:\n%s", id, panicLogged, accessLogged, logs)
		}
	}
	// A forged id (a log line injection) is replaced.
	req, _ := http.NewRequest("GET", srv.URL+"/boom", nil)
	req.Header.Set(api.RequestIDHeader, "x\" level=ERROR")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(api.RequestIDHeader); got == "" || strings.ContainsAny(got, "\" =") {
		t.Errorf("forged request id answered as %q", got)
	}
	// The server keeps serving.
	hr, err := srv.Client().Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != 200 {
		t.Errorf("healthz after panics: %d", hr.StatusCode)
	}
}
