package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// TestSecretStoreRoutes: admins set and delete secrets, operators list
// them, viewers see nothing, and no answer, audit entry or byte of the
// database file holds a value (SPEC §10.5).
func TestSecretStoreRoutes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const val = "St0re-V4lue-9931"
	admin, op, viewer := e.tokens[auth.RoleAdmin], e.tokens[auth.RoleOperator], e.tokens[auth.RoleViewer]
	body := `{"secret": "` + val + `"}`

	var answers []byte
	st, b := e.do(http.MethodPut, "/v1/secrets/db_password", op, body)
	e.wantError("PUT", "/v1/secrets/db_password", http.StatusForbidden, "forbidden", b, st)
	answers = append(answers, b...)
	st, b = e.do(http.MethodPut, "/v1/secrets/db_password", admin, `{"value": "`+val+`"}`)
	if st != http.StatusBadRequest {
		t.Fatalf("an unknown field: %d %s", st, b)
	}
	answers = append(answers, b...)
	st, b = e.do(http.MethodPut, "/v1/secrets/db_password", admin, body)
	if st != http.StatusOK {
		t.Fatalf("PUT as admin: %d %s", st, b)
	}
	answers = append(answers, b...)
	var rec store.Secret
	if err := json.Unmarshal(b, &rec); err != nil || rec.Name != "db_password" || rec.Owner != e.archons[auth.RoleAdmin].Name {
		t.Fatalf("PUT answer %s: %+v %v", b, rec, err)
	}
	st, b = e.do(http.MethodPut, "/v1/secrets/bad%20name", admin, body)
	e.wantError("PUT", "/v1/secrets/bad name", http.StatusBadRequest, "invalid", b, st)

	st, b = e.do(http.MethodGet, "/v1/secrets", viewer, "")
	e.wantError("GET", "/v1/secrets", http.StatusForbidden, "forbidden", b, st)
	list, err := e.client(auth.RoleOperator).ListSecrets(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "db_password" {
		t.Fatalf("ListSecrets as operator: %+v %v", list, err)
	}
	st, b = e.do(http.MethodGet, "/v1/secrets", op, "")
	answers = append(answers, b...)
	for _, p := range []string{"/v1/secrets/db_password"} {
		st, b = e.do(http.MethodGet, p, admin, "")
		if st != http.StatusNotFound && st != http.StatusMethodNotAllowed {
			t.Fatalf("GET %s: %d %s: no route reads a value", p, st, b)
		}
		answers = append(answers, b...)
	}
	if v, err := e.secrets.Value(ctx, "db_password"); err != nil || v != val {
		t.Fatalf("the keeper reads %q, %v", v, err)
	}

	// The audit log holds every call, never the value.
	st, b = e.do(http.MethodGet, "/v1/audit?limit=1000", admin, "")
	if st != http.StatusOK || !strings.Contains(string(b), "PUT /v1/secrets/{name}") {
		t.Fatalf("audit: %d %s", st, b)
	}
	answers = append(answers, b...)
	if strings.Contains(string(answers), val) {
		t.Fatalf("an answer or the audit log holds the value:\n%s", answers)
	}
	db, err := os.ReadFile(e.dbFile)
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(e.dbFile + "-wal")
	if strings.Contains(string(db)+string(wal), val) {
		t.Fatal("the SQLite database holds the value in clear")
	}

	if err := e.client(auth.RoleOperator).DeleteSecret(ctx, "db_password"); err == nil {
		t.Fatal("an operator deleted a secret")
	}
	if err := e.client(auth.RoleAdmin).DeleteSecret(ctx, "db_password"); err != nil {
		t.Fatal(err)
	}
	st, b = e.do(http.MethodDelete, "/v1/secrets/db_password", admin, "")
	e.wantError("DELETE", "/v1/secrets/db_password", http.StatusNotFound, "not_found", b, st)
}
