package storetest

import (
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

var cloudTests = []test{
	{"ProvidersProfiles", testCloudProvidersProfiles},
	{"Instances", testCloudInstances},
}

func testCloudProvidersProfiles(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetCloudProvider(ctx, "lab")
	wantCode(t, err, domain.CodeNotFound)
	wantCode(t, s.PutCloudProvider(ctx, store.CloudProvider{Name: "lab"}), domain.CodeInvalid)
	// A profile of an unknown provider is refused.
	wantCode(t, s.PutCloudProfile(ctx, store.CloudProfile{Name: "small", Provider: "lab"}), domain.CodeInvalid)

	must(t, s.PutCloudProvider(ctx, store.CloudProvider{Name: "lab", Kind: "local", Config: map[string]any{"a": "b"}, UpdatedAt: base}))
	must(t, s.PutCloudProvider(ctx, store.CloudProvider{Name: "lab", Kind: "exec", Config: map[string]any{"executable": "/bin/x"}, UpdatedAt: at(time.Hour)}))
	p, err := s.GetCloudProvider(ctx, "lab")
	must(t, err)
	if p.Kind != "exec" || p.Config["executable"] != "/bin/x" || p.Config["a"] != nil || !p.CreatedAt.Equal(base) || !p.UpdatedAt.Equal(at(time.Hour)) {
		t.Fatalf("provider after replace: %+v", p)
	}
	must(t, s.PutCloudProfile(ctx, store.CloudProfile{Name: "small", Provider: "lab", Spec: map[string]any{"rootfs": "/r"}, Covens: []string{"web", "lab", "web"}}))
	pr, err := s.GetCloudProfile(ctx, "small")
	must(t, err)
	if pr.Provider != "lab" || pr.Spec["rootfs"] != "/r" || len(pr.Covens) != 2 || pr.Covens[0] != "lab" {
		t.Fatalf("profile: %+v", pr)
	}
	ps, err := s.ListCloudProviders(ctx)
	must(t, err)
	prs, err := s.ListCloudProfiles(ctx)
	must(t, err)
	if len(ps) != 1 || len(prs) != 1 {
		t.Fatalf("lists: %d providers, %d profiles", len(ps), len(prs))
	}
	// A provider in use by a profile cannot go.
	wantCode(t, s.DeleteCloudProvider(ctx, "lab"), domain.CodeConflict)
	must(t, s.DeleteCloudProfile(ctx, "small"))
	wantCode(t, s.DeleteCloudProfile(ctx, "small"), domain.CodeNotFound)
	must(t, s.DeleteCloudProvider(ctx, "lab"))
	wantCode(t, s.DeleteCloudProvider(ctx, "lab"), domain.CodeNotFound)
}

func testCloudInstances(t *testing.T, s store.Store) {
	ctx := t.Context()
	must(t, s.PutCloudProvider(ctx, store.CloudProvider{Name: "lab", Kind: "local"}))
	wantCode(t, s.PutCloudInstance(ctx, store.CloudInstance{Provider: "lab", Name: "web-1"}), domain.CodeInvalid)
	must(t, s.PutCloudInstance(ctx, store.CloudInstance{Provider: "lab", Name: "web-2", Incarnation: "a", Profile: "small", CreatedAt: base}))
	must(t, s.PutCloudInstance(ctx, store.CloudInstance{Provider: "lab", Name: "web-1", Incarnation: "a", Profile: "small", CreatedAt: base}))
	must(t, s.PutCloudInstance(ctx, store.CloudInstance{Provider: "lab", Name: "db-1", Incarnation: "b", CreatedAt: base}))
	// Updating keeps it; another incarnation cannot take the name.
	must(t, s.PutCloudInstance(ctx, store.CloudInstance{Provider: "lab", Name: "web-1", Incarnation: "a", Profile: "small", ID: "i-1", Address: "10.0.0.1", SID: "web-1", CreatedAt: at(time.Hour)}))
	wantCode(t, s.PutCloudInstance(ctx, store.CloudInstance{Provider: "lab", Name: "web-1", Incarnation: "b"}), domain.CodeConflict)
	got, err := s.ListCloudInstances(ctx, "a")
	must(t, err)
	if len(got) != 2 || got[0].Name != "web-1" || got[0].ID != "i-1" || got[0].Address != "10.0.0.1" || got[0].SID != "web-1" || !got[0].CreatedAt.Equal(base) {
		t.Fatalf("instances of a: %+v", got)
	}
	all, err := s.ListCloudInstances(ctx, "")
	must(t, err)
	if len(all) != 3 {
		t.Fatalf("all instances: %+v", all)
	}
	// A provider with recorded instances cannot go.
	wantCode(t, s.DeleteCloudProvider(ctx, "lab"), domain.CodeConflict)
	must(t, s.DeleteCloudInstance(ctx, "lab", "web-1"))
	must(t, s.DeleteCloudInstance(ctx, "lab", "web-1"))
	got, err = s.ListCloudInstances(ctx, "a")
	must(t, err)
	if len(got) != 1 || got[0].Name != "web-2" {
		t.Fatalf("after delete: %+v", got)
	}
}
