package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// TestM4OnlyTheCheckerActsForOthers: audit M4 — the header that makes a
// Checker task's call act for its owner gives nothing to anyone else: an
// operator naming an admin in it is refused (403, audited under the
// operator with the Archon it tried to act for), and nothing is created.
func TestM4OnlyTheCheckerActsForOthers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.archons[auth.RoleAdmin]
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/archons", strings.NewReader(`{"name": "mallory", "role": "admin"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.tokens[auth.RoleOperator])
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(apitypes.HeaderOnBehalfOf, admin.ID)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	e.wantError("POST", "/v1/archons", http.StatusForbidden, "forbidden", b, resp.StatusCode)
	if !strings.Contains(string(b), "only the Keeper's Checker") {
		t.Errorf("refusal %s does not say why", b)
	}
	archons, err := e.st.ListArchons(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range archons {
		if a.Name == "mallory" {
			t.Fatal("an operator created an admin by naming one in the header")
		}
	}
	entries, err := e.st.ListAudit(ctx, store.AuditFilter{Action: "POST /v1/archons"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].ArchonID != e.archons[auth.RoleOperator].ID || entries[0].Summary["on_behalf_of"] != admin.ID {
		t.Fatalf("the attempt is audited as %+v", entries)
	}
}
