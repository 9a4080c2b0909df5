package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/notify"
	"github.com/soulstack/soulstack/internal/store"
)

func TestRulesAndEndpoints(t *testing.T) {
	e := newEnv(t)
	admin, op := e.tokens[auth.RoleAdmin], e.tokens[auth.RoleOperator]
	rule := `on: run.ended
if: event.status == "failed"
do:
  notify: {endpoint: pager, message: "run ${ event.apply_id } failed"}
cooldown: 10m
max_per_hour: 10
max_concurrent: 1
`
	body, _ := json.Marshal(map[string]string{"source": rule})
	if st, b := e.do("PUT", "/v1/keeper-rules/page", op, string(body)); st != http.StatusForbidden {
		t.Fatalf("operator put keeper rule: %d %s", st, b)
	}
	bad, _ := json.Marshal(map[string]string{"source": strings.Replace(rule, "event.status", "event.stauts", 1)})
	st, b := e.do("PUT", "/v1/keeper-rules/page", admin, string(bad))
	if st != http.StatusBadRequest || !strings.Contains(string(b), `"file":"rules/page.yml","line":2`) || !strings.Contains(string(b), "has no field stauts (did you mean status?)") {
		t.Fatalf("invalid rule: %d %s", st, b)
	}
	if st, b := e.do("PUT", "/v1/keeper-rules/page", admin, string(body)); st != http.StatusOK {
		t.Fatalf("put rule: %d %s", st, b)
	}
	st, b = e.do("GET", "/v1/rules", op, "")
	if st != http.StatusOK || !strings.Contains(string(b), `"id":"keeper/page"`) || !strings.Contains(string(b), `"max_per_hour":10`) || !strings.Contains(string(b), `"paused":false`) {
		t.Fatalf("list: %d %s", st, b)
	}
	if st, b := e.do("POST", "/v1/rules/keeper/page/pause", op, `{"reason":"x"}`); st != http.StatusForbidden {
		t.Fatalf("operator pauses a Keeper-wide rule: %d %s", st, b)
	}
	if st, b := e.do("POST", "/v1/rules/keeper/page/pause", admin, `{"reason":"maintenance"}`); st != http.StatusNoContent {
		t.Fatalf("pause: %d %s", st, b)
	}
	if _, b := e.do("GET", "/v1/rules", op, ""); !strings.Contains(string(b), `"paused":true`) {
		t.Fatalf("not paused: %s", b)
	}
	if st, b := e.do("POST", "/v1/rules/keeper/page/resume", admin, ""); st != http.StatusNoContent {
		t.Fatalf("resume: %d %s", st, b)
	}
	if st, b := e.do("POST", "/v1/rules/nope/heal/pause", op, ""); st != http.StatusNotFound {
		t.Fatalf("pause of an unknown incarnation's rule: %d %s", st, b)
	}

	var mu sync.Mutex
	var got []*http.Request
	var gotBody []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, gotBody = append(got, r), append(gotBody, string(b))
		mu.Unlock()
	}))
	defer rcv.Close()
	ep := `{"kind":"webhook","url":"` + rcv.URL + `","secret":"whsec-topsecret"}`
	if st, _ := e.do("PUT", "/v1/notify/endpoints/pager", op, ep); st != http.StatusForbidden {
		t.Fatalf("operator sets an endpoint: %d", st)
	}
	st, b = e.do("PUT", "/v1/notify/endpoints/pager", admin, ep)
	if st != http.StatusOK || strings.Contains(string(b), "whsec") || !strings.Contains(string(b), `"has_secret":true`) {
		t.Fatalf("put endpoint: %d %s", st, b)
	}
	stored, _ := e.st.GetEndpoint(context.Background(), "pager")
	if strings.Contains(string(stored.Sealed), "whsec") {
		t.Fatal("the endpoint secret is stored in clear")
	}
	if _, b := e.do("GET", "/v1/notify/endpoints", admin, ""); strings.Contains(string(b), "whsec") {
		t.Fatalf("list shows the secret: %s", b)
	}
	audit, _ := e.st.ListAudit(context.Background(), store.AuditFilter{})
	for _, a := range audit {
		if s, _ := json.Marshal(a.Summary); strings.Contains(string(s), "whsec") {
			t.Fatalf("the audit log holds the secret: %s", s)
		}
	}
	st, b = e.do("POST", "/v1/notify/endpoints/pager/test", admin, "")
	if st != http.StatusOK || len(got) != 1 {
		t.Fatalf("notify test: %d %s (received %d)", st, b, len(got))
	}
	if !notify.Verify("whsec-topsecret", got[0].Header.Get(notify.HeaderTimestamp), []byte(gotBody[0]), got[0].Header.Get(notify.HeaderSignature)) {
		t.Fatal("the test notification's signature does not verify")
	}
	if st, b := e.do("GET", "/v1/notify/deliveries?status=dead", admin, ""); st != http.StatusOK || string(b) != "[]\n" {
		t.Fatalf("dead letters: %d %s", st, b)
	}
	if st, b := e.do("GET", "/v1/rules/history?rule=keeper/page", e.tokens[auth.RoleViewer], ""); st != http.StatusOK || string(b) != "[]\n" {
		t.Fatalf("history: %d %s", st, b)
	}
	if st, _ := e.do("DELETE", "/v1/keeper-rules/page", admin, ""); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if st, _ := e.do("DELETE", "/v1/notify/endpoints/pager", admin, ""); st != http.StatusNoContent {
		t.Fatalf("delete endpoint: %d", st)
	}
}
