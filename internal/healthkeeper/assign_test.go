package healthkeeper

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/health"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

// servicesByName opens a fixed service per name.
type servicesByName map[string]*dsl.Service

func (s servicesByName) Open(_ context.Context, name, _ string) (*dsl.Service, error) {
	return s[name], nil
}

// countingStore counts the SIDs whose soulprints GetSouls read.
type countingStore struct {
	store.Store
	mu   sync.Mutex
	read []string
}

func (c *countingStore) GetSouls(ctx context.Context, sids []string) ([]store.Soul, error) {
	c.mu.Lock()
	c.read = append(c.read, sids...)
	c.mu.Unlock()
	return c.Store.GetSouls(ctx, sids)
}

// TestAssignReadsOnlyCheckedSouls: a soul in an incarnation with health
// checks gets them rendered from its soulprint; a soul only in
// incarnations without checks gets an empty assignment without its
// soulprint being read (a large fleet without checks decodes nothing).
func TestAssignReadsOnlyCheckedSouls(t *testing.T) {
	ctx := context.Background()
	sq, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	st := &countingStore{Store: sq}
	for _, so := range []store.Soul{
		{SID: "web1", PublicKey: make([]byte, 32), Status: store.SoulConnected, Soulprint: map[string]any{"port": 8080}},
		{SID: "db1", PublicKey: make([]byte, 32), Status: store.SoulConnected, Soulprint: map[string]any{"port": 5432}},
	} {
		if err := sq.UpsertSoul(ctx, so); err != nil {
			t.Fatal(err)
		}
	}
	for i, inc := range []store.Incarnation{
		{Name: "web", Service: "checked", Commit: "c1", Members: []string{"web1"}},
		{Name: "db", Service: "plain", Commit: "c1", Members: []string{"db1"}},
	} {
		svc := store.Service{Name: inc.Service, Git: "x", Ref: "main", Commit: "c1"}
		if err := sq.CreateService(ctx, svc); err != nil {
			t.Fatal(err)
		}
		if err := sq.CreateIncarnation(ctx, inc, store.Run{ID: "r" + string(rune('1'+i)), Scenario: "create"}); err != nil {
			t.Fatal(err)
		}
	}
	services := servicesByName{
		"checked": {Health: map[string]*dsl.HealthCheck{"port": {Name: "port", Module: "core.net.port",
			Params: map[string]any{"port": "${soulprint.self.port}"}}}},
		"plain": {},
	}
	var mu sync.Mutex
	sent := map[string]health.Assignment{}
	m, err := New(Config{Store: st, Services: services, Connected: func() []string { return nil },
		Send: func(sid string, b []byte) bool {
			var a health.Assignment
			if err := json.Unmarshal(b, &a); err != nil {
				t.Errorf("assignment of %s: %v", sid, err)
			}
			mu.Lock()
			sent[sid] = a
			mu.Unlock()
			return true
		}})
	if err != nil {
		t.Fatal(err)
	}
	m.assign(ctx, []string{"db1", "web1"}, false)
	if len(st.read) != 1 || st.read[0] != "web1" {
		t.Errorf("soulprints read: %v, want only web1's", st.read)
	}
	web, db := sent["web1"], sent["db1"]
	if len(web.Checks) != 1 || web.Checks[0].Name != "port" || web.Checks[0].Params["port"] != float64(8080) {
		t.Errorf("web1 assigned %+v, want the port check on 8080", web.Checks)
	}
	if a, ok := sent["db1"]; !ok || len(db.Checks) != 0 {
		t.Errorf("db1 assigned %+v (sent %v), want an empty assignment", a.Checks, ok)
	}
}
