package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
)

// TestCloudProvidersAndProfiles: admins register, replace and delete
// providers and profiles; everyone, admins too, reads them with the
// provider's env values masked, and the database holds them sealed (N3); bad configs, unknown providers and deleting a provider in use are
// refused with a clear reason; the audit log never holds an env value.
func TestCloudProvidersAndProfiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin, op, viewer := e.tokens[auth.RoleAdmin], e.tokens[auth.RoleOperator], e.tokens[auth.RoleViewer]
	const tokenValue = "hcloud-api-value-31337"

	put := `{"kind":"exec","config":{"executable":"/usr/local/bin/prov","args":["--region","fsn1"],"env":{"HCLOUD":"` + tokenValue + `"},"timeout":"2m"}}`
	if st, body := e.do("PUT", "/v1/cloud/providers/hetzner", op, put); st != http.StatusForbidden {
		t.Fatalf("operator PUT provider: %d %s", st, body)
	}
	// N3: the env is sealed at rest and shown masked, to admins too.
	if st, body := e.do("PUT", "/v1/cloud/providers/hetzner", admin, put); st != http.StatusOK || strings.Contains(string(body), tokenValue) || !strings.Contains(string(body), `"HCLOUD":"****"`) {
		t.Fatalf("admin PUT provider: %d %s", st, body)
	}
	for _, f := range []string{e.dbFile, e.dbFile + "-wal"} {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), tokenValue) {
			t.Fatalf("the database file %s holds the provider's env value in plain text", f)
		}
	}
	stored, err := e.st.GetCloudProvider(ctx, "hetzner")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := e.secrets.OpenProviderEnv("hetzner", "HCLOUD", stored.Config["env"].(map[string]any)["HCLOUD"].(string)); err != nil || v != tokenValue {
		t.Fatalf("the sealed env opens to %q, %v", v, err)
	}
	// Sending the shown config back keeps the value; **** for a variable
	// without one is refused.
	if st, body := e.do("PUT", "/v1/cloud/providers/hetzner", admin, strings.Replace(put, tokenValue, "****", 1)); st != http.StatusOK {
		t.Fatalf("admin PUT of the shown config: %d %s", st, body)
	}
	stored, _ = e.st.GetCloudProvider(ctx, "hetzner")
	if v, err := e.secrets.OpenProviderEnv("hetzner", "HCLOUD", stored.Config["env"].(map[string]any)["HCLOUD"].(string)); err != nil || v != tokenValue {
		t.Fatalf("after a PUT of ****, the env opens to %q, %v", v, err)
	}
	if st, body := e.do("PUT", "/v1/cloud/providers/other", admin, strings.Replace(put, tokenValue, "****", 1)); st != http.StatusBadRequest || !strings.Contains(string(body), "env HCLOUD") {
		t.Fatalf("PUT of **** for a new provider: %d %s", st, body)
	}
	for _, tok := range []string{admin, viewer, op} {
		st, body := e.do("GET", "/v1/cloud/providers/hetzner", tok, "")
		if st != http.StatusOK || strings.Contains(string(body), tokenValue) || !strings.Contains(string(body), `"HCLOUD":"****"`) || !strings.Contains(string(body), "fsn1") {
			t.Errorf("non-admin GET provider: %d %s", st, body)
		}
		st, body = e.do("GET", "/v1/cloud/providers", tok, "")
		if st != http.StatusOK || strings.Contains(string(body), tokenValue) {
			t.Errorf("non-admin list providers: %d %s", st, body)
		}
	}
	bad := []struct{ name, body, want string }{
		{"hetzner", `{"kind":"ec2","config":{}}`, "provider kind must be"},
		{"hetzner", `{"kind":"exec","config":{"executable":"prov"}}`, "absolute path"},
		{"hetzner", `{"kind":"exec","config":{"executable":"/bin/p","timeout":"soon"}}`, "positive duration"},
		{"hetzner", `{"kind":"exec","config":{"executable":"/bin/p","exe":"x"}}`, "unknown field"},
		{"Bad_Name", `{"kind":"local"}`, "DNS label"},
	}
	for _, b := range bad {
		st, body := e.do("PUT", "/v1/cloud/providers/"+b.name, admin, b.body)
		if st != http.StatusBadRequest || !strings.Contains(string(body), b.want) {
			t.Errorf("PUT provider %s: %d %s, want 400 with %q", b.body, st, body, b.want)
		}
	}
	if st, body := e.do("PUT", "/v1/cloud/providers/lab", admin, `{"kind":"local"}`); st != http.StatusOK {
		t.Fatalf("PUT local provider: %d %s", st, body)
	}

	// Profiles.
	if st, body := e.do("PUT", "/v1/cloud/profiles/small", admin, `{"provider":"nope","spec":{}}`); st != http.StatusBadRequest || !strings.Contains(string(body), "which is not registered") {
		t.Errorf("profile of an unknown provider: %d %s", st, body)
	}
	if st, body := e.do("PUT", "/v1/cloud/profiles/small", admin, `{"provider":"lab","spec":{"rootfs":"relative"}}`); st != http.StatusBadRequest || !strings.Contains(string(body), "rootfs must be the absolute path") {
		t.Errorf("local profile without an absolute rootfs: %d %s", st, body)
	}
	if st, body := e.do("PUT", "/v1/cloud/profiles/small", admin, `{"provider":"lab","spec":{"rootfs":"/srv/rootfs"},"covens":["web","Bad Coven"]}`); st != http.StatusBadRequest {
		t.Errorf("bad coven: %d %s", st, body)
	}
	cl := e.client(auth.RoleAdmin)
	pr, err := cl.SetCloudProfile(ctx, "small", apitypes.CloudProfileRequest{Provider: "lab", Spec: map[string]any{"rootfs": "/srv/rootfs"}, Covens: []string{"web", "lab"}})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Provider != "lab" || len(pr.Covens) != 2 || pr.Spec["rootfs"] != "/srv/rootfs" {
		t.Errorf("profile = %+v", pr)
	}
	if _, err := cl.SetCloudProfile(ctx, "big", apitypes.CloudProfileRequest{Provider: "hetzner", Spec: map[string]any{"type": "cx22", "api_token": "spec-secret-77"}}); err != nil {
		t.Fatal(err)
	}
	st, body := e.do("GET", "/v1/cloud/profiles/big", viewer, "")
	if st != http.StatusOK || strings.Contains(string(body), "spec-secret-77") || !strings.Contains(string(body), "cx22") {
		t.Errorf("viewer GET profile: %d %s", st, body)
	}
	// A kind change that would break a profile is refused.
	if st, body := e.do("PUT", "/v1/cloud/providers/hetzner", admin, `{"kind":"local"}`); st != http.StatusBadRequest || !strings.Contains(string(body), "profile big") {
		t.Errorf("kind change breaking a profile: %d %s", st, body)
	}
	if st, body := e.do("DELETE", "/v1/cloud/providers/lab", admin, ""); st != http.StatusConflict || !strings.Contains(string(body), "in use") {
		t.Errorf("delete provider in use: %d %s", st, body)
	}
	viewerCl := e.client(auth.RoleViewer)
	profiles, err := viewerCl.ListCloudProfiles(ctx)
	if err != nil || len(profiles) != 2 {
		t.Fatalf("viewer list profiles: %v %+v", err, profiles)
	}
	if err := viewerCl.DeleteCloudProfile(ctx, "small"); err == nil {
		t.Error("a viewer deleted a profile")
	}
	for _, n := range []string{"small", "big"} {
		if err := cl.DeleteCloudProfile(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.DeleteCloudProvider(ctx, "lab"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetCloudProvider(ctx, "lab"); err == nil {
		t.Error("deleted provider still shown")
	}
	if st, _ := e.do("GET", "/v1/cloud/instances?incarnation=x", viewer, ""); st != http.StatusOK {
		t.Errorf("list instances: %d", st)
	}

	es, err := cl.ListAudit(ctx, apitypes.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(es)
	if strings.Contains(string(all), tokenValue) || strings.Contains(string(all), "spec-secret-77") {
		t.Errorf("the audit log holds a provider secret: %s", all)
	}
	if !strings.Contains(string(all), "PUT /v1/cloud/providers/{name}") || !strings.Contains(string(all), "DELETE /v1/cloud/profiles/{name}") {
		t.Errorf("cloud changes not audited: %s", all)
	}
}
