package core

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

func TestHTTPRequest(t *testing.T) {
	var gotBody, gotType, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotType, gotAuth = string(b), r.Header.Get("Content-Type"), r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/health":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		case "/created":
			w.WriteHeader(http.StatusCreated)
		default:
			http.Error(w, "nope", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()

	res := run(t, "core.http.request", map[string]any{"url": srv.URL + "/health"}, nil)
	wantChanged(t, res, false)
	if res.RC != 200 || res.Data["status"] != int64(200) || res.Stdout != `{"status":"ok"}` {
		t.Errorf("GET result %+v", res)
	}
	if js, _ := res.Data["json"].(map[string]any); js["status"] != "ok" {
		t.Errorf("data.json = %v", res.Data["json"])
	}

	res = run(t, "core.http.request", map[string]any{"url": srv.URL + "/created", "method": "post",
		"body": map[string]any{"n": 1}, "headers": map[string]any{"Authorization": "Bearer x"}, "status": 201}, nil)
	wantChanged(t, res, true)
	var sent map[string]any
	if err := json.Unmarshal([]byte(gotBody), &sent); err != nil || sent["n"] != float64(1) || gotType != "application/json" || gotAuth != "Bearer x" {
		t.Errorf("server saw body %q type %q auth %q", gotBody, gotType, gotAuth)
	}

	res = run(t, "core.http.request", map[string]any{"url": srv.URL + "/broken"}, nil)
	if !res.Failed || !strings.Contains(res.Msg, "status 500, want 2xx") {
		t.Errorf("500 result %+v", res)
	}
	res = run(t, "core.http.request", map[string]any{"url": srv.URL + "/health", "status": 204}, nil)
	if !res.Failed || !strings.Contains(res.Msg, "status 200, want 204") {
		t.Errorf("status mismatch result %+v", res)
	}

	gotBody = "untouched"
	res = run(t, "core.http.request", map[string]any{"url": srv.URL + "/created", "method": "DELETE"}, &module.Env{Check: true})
	if !res.Skipped || gotBody != "untouched" {
		t.Errorf("check mode sent a DELETE: %+v", res)
	}
	_, err := runErr(t, "core.http.request", map[string]any{"url": "ftp://x"}, nil)
	wantErrContains(t, err, "http:// or https://")
}

func TestCloudModulesRunOnlyInTheEngine(t *testing.T) {
	_, err := runErr(t, "core.cloud.created", map[string]any{"provider": "hetzner", "profile": "cx22", "count": int64(1)}, nil)
	wantErrContains(t, err, "only in a scenario step on: keeper", "hetzner")
	m, _ := module.Lookup("core.cloud.created")
	if !m.Schema().KeeperSide {
		t.Error("core.cloud.created must be keeper-side")
	}
}
