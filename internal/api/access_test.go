package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/api"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store"
)

// builtinAllows reports whether a built-in role held on the whole keeper
// passes route rt's decision.
func builtinAllows(r auth.Role, rt api.Route) bool {
	if rt.Permission == auth.PermAuthenticated {
		return true
	}
	perms, _ := auth.BuiltinRole(string(r))
	return slices.Contains(perms, rt.Permission)
}

// TestBuiltinRolesKeepLegacyPowers pins the built-in roles to the role
// matrix every route had before permissions (testdata/legacy_roles.txt,
// from main before issue 34): on the whole keeper, admin, operator and
// viewer may call exactly the routes they could.
func TestBuiltinRolesKeepLegacyPowers(t *testing.T) {
	e := newEnv(t)
	f, err := os.Open("testdata/legacy_roles.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	legacy := map[string]auth.Role{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pat, role, _ := strings.Cut(line, "\t")
		legacy[pat] = auth.Role(role)
	}
	routes := map[string]api.Route{}
	for _, rt := range e.api.Routes() {
		routes[rt.Pattern] = rt
	}
	for pat, need := range legacy {
		rt, ok := routes[pat]
		if !ok {
			t.Errorf("%s is gone", pat)
			continue
		}
		for _, r := range []auth.Role{auth.RoleViewer, auth.RoleOperator, auth.RoleAdmin} {
			if got, want := builtinAllows(r, rt), r.Allows(need); got != want {
				t.Errorf("%s: role %s allowed=%v, before permissions %v (needed %s; now %q on %s)", pat, r, got, want, need, rt.Permission, rt.Object)
			}
		}
	}
	// Routes added since are about who may do what: admin only.
	for pat, rt := range routes {
		if _, ok := legacy[pat]; ok || rt.Public {
			continue
		}
		if rt.Permission != auth.PermManageAccess && rt.Permission != auth.PermAuthenticated {
			t.Errorf("new route %s needs %q: add it to the legacy matrix's reasoning or to this test", pat, rt.Permission)
		}
	}
}

// fixture is the world of the route × role × scope table: two services
// with an incarnation each, a run of db-1, souls in covens dbc and webc.
type fixture struct {
	runID string
}

func seedAccess(t *testing.T, st store.Store) fixture {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	for _, svc := range []string{"db", "web"} {
		if _, err := st.GetService(ctx, svc); err == nil {
			continue
		}
		if err := st.CreateService(ctx, store.Service{Name: svc, Git: "/nonexistent/" + svc, Ref: "main", Commit: strings.Repeat("a", 40)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []string{"dbc", "webc"} {
		sid := fmt.Sprintf("soul-%s", c)
		if _, err := st.GetSoul(ctx, sid); err == nil {
			continue
		}
		if err := st.UpsertSoul(ctx, store.Soul{SID: sid, PublicKey: []byte{byte(i + 1)}, Status: store.SoulConnected, Covens: []string{c}, LastSeen: now}); err != nil {
			t.Fatal(err)
		}
	}
	fx := fixture{runID: "run-db-1"}
	for _, x := range []struct{ inc, svc, sid string }{{"db-1", "db", "soul-dbc"}, {"web-1", "web", "soul-webc"}} {
		if _, err := st.GetIncarnation(ctx, x.inc); err == nil {
			continue
		}
		run := store.Run{ID: "run-" + x.inc, Incarnation: x.inc, Scenario: "create", Status: store.RunPending, CreatedAt: now}
		inc := store.Incarnation{Name: x.inc, Service: x.svc, Ref: "main", Commit: strings.Repeat("a", 40), Covens: []string{x.svc + "c"},
			Status: store.IncarnationReady, Members: []string{x.sid}}
		if err := st.CreateIncarnation(ctx, inc, run); err != nil {
			t.Fatal(err)
		}
		if err := st.FinishRun(ctx, run.ID, store.RunSucceeded, "", now); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

// grantee is an Archon with no keeper-wide role and one grant.
type grantee struct {
	role  auth.Role
	scope string
	token string
}

func newGrantee(t *testing.T, e *env, role auth.Role, scope string) grantee {
	t.Helper()
	ctx := context.Background()
	name := strings.NewReplacer(":", "-").Replace(fmt.Sprintf("%s-on-%s", role, scope))
	ar, err := e.auth.CreateArchon(ctx, name, auth.RoleNone)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := auth.ParseScope(scope)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.auth.Grant(ctx, auth.Principal{ArchonID: e.archons[auth.RoleAdmin].ID}, store.SubjectArchon, ar.ID, string(role), sc); err != nil {
		t.Fatal(err)
	}
	tok, err := e.auth.IssueToken(ctx, ar, time.Hour, "table")
	if err != nil {
		t.Fatal(err)
	}
	return grantee{role: role, scope: scope, token: tok.Token}
}

// scopesOf is which grant scopes reach a route's object in the fixture.
func scopesOf(kind string) []string {
	switch kind {
	case auth.ObjKeeper:
		return []string{"keeper"}
	case auth.ObjIncarnation, auth.ObjRun:
		return []string{"keeper", "service:db", "incarnation:db-1"}
	case auth.ObjService:
		return []string{"keeper", "service:db"}
	case auth.ObjSoul, auth.ObjCoven:
		return []string{"keeper", "coven:dbc"}
	case auth.ObjSecret:
		return []string{"keeper", "service:db"}
	}
	return nil
}

// fill puts the fixture's objects into a route pattern, and a body naming
// them where the route reads its object from the body.
func fill(rt api.Route, fx fixture) (method, path, body string) {
	method, pattern, _ := strings.Cut(rt.Pattern, " ")
	var segs []string
	for _, seg := range strings.Split(pattern, "/") {
		switch seg {
		case "{name}":
			switch rt.Object {
			case auth.ObjService:
				seg = "db"
			case auth.ObjIncarnation:
				seg = "db-1"
			case auth.ObjSecret:
				seg = "dbpass"
			default:
				seg = "x"
			}
		case "{scope}":
			seg = "db-1"
		case "{apply_id}":
			seg = fx.runID
		case "{sid}":
			seg = "soul-dbc"
		default:
			if strings.HasPrefix(seg, "{") {
				seg = "x"
			}
		}
		segs = append(segs, seg)
	}
	path = strings.Join(segs, "/")
	switch {
	case rt.Pattern == "POST /v1/incarnations":
		body = `{"service": "db"}`
	case rt.Pattern == "POST /v1/services":
		body = `{"name": "db"}`
	case rt.Object == auth.ObjCoven || rt.Pattern == "PUT /v1/souls/{sid}/covens":
		body = `{"covens": ["dbc"]}`
	case rt.Object == auth.ObjSecret && method == http.MethodPut:
		body = `{"scope": "service:db"}`
	case method != http.MethodGet && method != http.MethodDelete:
		body = `{}`
	}
	return method, path, body
}

// TestRouteRoleScopeTable is the route × role × scope table, generated
// from the route table: for every authenticated route, an Archon holding
// each built-in role on each scope is refused (403 naming the permission)
// exactly when the role lacks the route's permission or the scope does not
// reach the route's object. A route registered without a decision panics
// at registration; one whose decision is wrong fails here.
func TestRouteRoleScopeTable(t *testing.T) {
	e := newEnv(t)
	fx := seedAccess(t, e.st)
	reseed := func() {
		seedAccess(t, e.st)
		if err := e.secrets.SetScoped(context.Background(), "dbpass", "s3cret", "admin", store.ScopeService, "db"); err != nil {
			t.Fatal(err)
		}
	}
	reseed()
	// Outside the contract recorder: the table's bodies are deliberately
	// incomplete, and only the authorization answer is asserted.
	srv := httptest.NewServer(e.api.Handler())
	t.Cleanup(srv.Close)
	roles := []auth.Role{auth.RoleAdmin, auth.RoleOperator, auth.RoleAuditor, auth.RoleViewer}
	scopes := []string{"keeper", "service:db", "incarnation:db-1", "coven:dbc", "service:web"}
	var gs []grantee
	for _, r := range roles {
		for _, sc := range scopes {
			gs = append(gs, newGrantee(t, e, r, sc))
		}
	}
	routes := e.api.Routes()
	slices.SortFunc(routes, func(a, b api.Route) int {
		// Destructive calls last, so that earlier cases find the fixture.
		return strings.Compare(destructive(a.Pattern), destructive(b.Pattern))
	})
	cases := 0
	for _, rt := range routes {
		if rt.Public {
			continue
		}
		method, path, body := fill(rt, fx)
		for _, g := range gs {
			want := true
			if rt.Permission != auth.PermAuthenticated {
				perms, _ := auth.BuiltinRole(string(g.role))
				reach := slices.Contains(scopesOf(rt.Object), g.scope)
				if rt.Listed {
					reach = true // a list answers what the grant reaches
				}
				want = slices.Contains(perms, rt.Permission) && reach
			}
			if destructive(rt.Pattern)[0] == '1' {
				reseed()
			}
			st, b := rawDo(t, srv, method, path, g.token, body)
			cases++
			if got := st != http.StatusForbidden; got != want {
				t.Errorf("%s as %s on %s: status %d (%s), want allowed=%v", rt.Pattern, g.role, g.scope, st, b, want)
				continue
			}
			if st == http.StatusForbidden && !strings.Contains(string(b), fmt.Sprintf("%q", string(rt.Permission))) &&
				!strings.Contains(string(b), "manage_") && !strings.Contains(string(b), "check_run") {
				t.Errorf("%s as %s on %s: 403 does not name permission %q: %s", rt.Pattern, g.role, g.scope, rt.Permission, b)
			}
		}
	}
	t.Logf("%d route × role × scope cases", cases)
}

// destructive sorts calls that delete the fixture after the others.
func destructive(pattern string) string {
	if strings.HasPrefix(pattern, "DELETE /v1/incarnations/{name}") && !strings.Contains(pattern, "drift") && !strings.Contains(pattern, "members") ||
		strings.HasPrefix(pattern, "DELETE /v1/services/") || strings.HasPrefix(pattern, "DELETE /v1/souls/") ||
		strings.HasPrefix(pattern, "DELETE /v1/secrets/") {
		return "1" + pattern
	}
	return "0" + pattern
}

// rawDo sends one request and reads the answer's head and first bytes
// (event streams never end).
func rawDo(t *testing.T, srv *httptest.Server, method, path, token, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	} else {
		rd = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, nil
	}
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	return resp.StatusCode, buf[:n]
}

// TestScopedTeamSeesOnlyItsIncarnations: a member of team "dbteam" with
// operator on service db lists db's incarnation and runs only (with page
// cursors over what it sees), may run there and is refused on web-1 with a
// 403 naming "run"; the refusal is audited; access check explains both.
func TestScopedTeamSeesOnlyItsIncarnations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	seedAccess(t, e.st)
	admin := e.client(auth.RoleAdmin)
	ar, err := admin.CreateArchon(ctx, apitypes.CreateArchonRequest{Name: "dana", Role: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTeam(ctx, apitypes.CreateTeamRequest{Name: "dbteam"}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddTeamMember(ctx, "dbteam", "dana"); err != nil {
		t.Fatal(err)
	}
	g, err := admin.CreateGrant(ctx, apitypes.GrantRequest{Team: "dbteam", Role: "operator", Scope: "service:db"})
	if err != nil {
		t.Fatal(err)
	}
	tok := ar.Token.Token

	// Lists: only db's.
	for path, want := range map[string][]string{
		"/v1/incarnations":         {"db-1"},
		"/v1/runs":                 {"run-db-1"},
		"/v1/services":             {"db"},
		"/v1/runs?limit=1":         {"run-db-1"},
		"/v1/incarnations?limit=1": {"db-1"},
	} {
		st, b := e.do("GET", path, tok, "")
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, st, b)
		}
		var items []map[string]any
		if err := json.Unmarshal(b, &items); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			for _, k := range []string{"apply_id", "name"} {
				if v, ok := it[k].(string); ok {
					got = append(got, v)
					break
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("GET %s as a db team member: %v, want %v", path, got, want)
		}
	}
	// Page cursors count only what the member sees: one item, no next page.
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/runs?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if next := resp.Header.Get(api.NextCursorHeader); next != "" {
		t.Errorf("runs page of a scoped member announces a next page %q over runs it may not see", next)
	}
	// Souls: a coven grant reaches its souls; the service grant does not.
	st, b := e.do("GET", "/v1/souls", tok, "")
	if st != http.StatusOK || strings.Contains(string(b), "soul-") {
		t.Errorf("souls without a coven grant: %d %s", st, b)
	}

	// Refused on web-1, naming the permission; audited.
	st, b = e.do("POST", "/v1/incarnations/web-1/unlock", tok, `{"reason": "x"}`)
	d := e.wantError("POST", "/v1/incarnations/web-1/unlock", http.StatusForbidden, "forbidden", b, st)
	if !strings.Contains(d.Message, `"unlock"`) || !strings.Contains(d.Message, "incarnation:web-1") {
		t.Errorf("403 message %q does not name the permission and the object", d.Message)
	}
	st, b = e.do("GET", "/v1/incarnations/web-1", tok, "")
	e.wantError("GET", "/v1/incarnations/web-1", http.StatusForbidden, "forbidden", b, st)
	entries, err := e.st.ListAudit(ctx, store.AuditFilter{Action: "access.denied"})
	if err != nil {
		t.Fatal(err)
	}
	denied := map[string]bool{}
	for _, en := range entries {
		if en.ArchonID == ar.Archon.ID {
			denied[en.Target+" "+fmt.Sprint(en.Summary["permission"])] = true
		}
	}
	if !denied["incarnation:web-1 unlock"] || !denied["incarnation:web-1 read"] {
		t.Errorf("refusals not audited: %v", denied)
	}
	// Allowed on db-1 (the handler answers; not a 403).
	if st, b := e.do("POST", "/v1/incarnations/db-1/unlock", tok, `{"reason": "x"}`); st == http.StatusForbidden {
		t.Errorf("unlock db-1 as db team: %d %s", st, b)
	}

	// access check explains: which grant allowed, and why none did.
	yes, err := admin.AccessCheck(ctx, "dana", "run", "incarnation:db-1")
	if err != nil {
		t.Fatal(err)
	}
	if !yes.Allowed || len(yes.Grants) != 1 || yes.Grants[0].ID != g.ID || !strings.Contains(yes.Reason, "team dbteam") {
		t.Errorf("access check db-1: %+v", yes)
	}
	no, err := admin.AccessCheck(ctx, "dana", "run", "incarnation:web-1")
	if err != nil {
		t.Fatal(err)
	}
	if no.Allowed || !strings.Contains(no.Reason, "service:web") || len(no.Held) != 1 {
		t.Errorf("access check web-1: %+v", no)
	}
	// Grant changes are audited.
	if err := admin.DeleteGrant(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	entries, err = e.st.ListAudit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, en := range entries {
		if strings.Contains(en.Action, "/v1/grants") || strings.Contains(en.Action, "/v1/teams") {
			changes = append(changes, en.Action+" "+en.Target)
		}
	}
	if !slices.Contains(changes, "DELETE /v1/grants/{id} "+g.ID) || !slices.Contains(changes, "POST /v1/grants "+g.ID) {
		t.Errorf("grant changes not audited: %v", changes)
	}
	if st, _ := e.do("GET", "/v1/incarnations/db-1", tok, ""); st != http.StatusForbidden {
		t.Errorf("after the grant was revoked: %d, want 403", st)
	}
}
