package keeper_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/store"
)

// cloudRig is a keeper with exec providers whose instances are real soul
// processes (internal/cloud/testprovider), confined to directories.
type cloudRig struct {
	*fleet
	procs string // the provider's DIR
}

func newCloudRig(t *testing.T) *cloudRig {
	f := inProcessKeeper(t, "")
	r := &cloudRig{fleet: f, procs: filepath.Join(f.dir, "procs")}
	if err := os.MkdirAll(r.procs, 0o700); err != nil {
		t.Fatal(err)
	}
	// Whatever a test leaves running is killed by its PID.
	t.Cleanup(func() {
		pids, _ := filepath.Glob(filepath.Join(r.procs, "*.pid"))
		for _, p := range pids {
			b, _ := os.ReadFile(p)
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return r
}

func (r *cloudRig) provider(name, mode, timeout string) {
	r.t.Helper()
	_, err := r.c.SetCloudProvider(r.ctx, name, apitypes.CloudProviderRequest{Kind: "exec", Config: map[string]any{
		"executable": providerBin, "timeout": timeout,
		"env": map[string]any{"DIR": r.procs, "SOUL": soulBin, "MODE": mode},
	}})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *cloudRig) register(name, dir string) {
	r.t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	repo := catalogtest.NewRepo(r.t)
	repo.Commit(files, name)
	if _, err := r.c.RegisterService(r.ctx, apitypes.RegisterServiceRequest{Name: name, Git: repo.Dir, Ref: "master"}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *cloudRig) runOn(inc, scenario string, input map[string]any, check bool) apitypes.RunDetail {
	r.t.Helper()
	acc, err := r.c.StartRun(r.ctx, inc, apitypes.StartRunRequest{Scenario: scenario, Input: input, Check: check})
	if err != nil {
		r.t.Fatalf("starting %s on %s: %v", scenario, inc, err)
	}
	return r.awaitRun(acc.ApplyID, 60*time.Second)
}

func (r *cloudRig) pid(name string) string {
	b, _ := os.ReadFile(filepath.Join(r.procs, name+".pid"))
	return string(b)
}

func (r *cloudRig) instances(inc string) []string {
	r.t.Helper()
	list, err := r.c.ListCloudInstances(r.ctx, inc)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, in := range list {
		out = append(out, in.Name+"="+in.ID)
	}
	return out
}

// noToken fails when a join token shows anywhere in what the keeper
// stored or answered.
func (r *cloudRig) noToken(what string, v any) {
	r.t.Helper()
	b, _ := json.Marshal(v)
	if strings.Contains(string(b), "SSJ1.") {
		r.t.Errorf("%s holds a join token: %s", what, b)
	}
}

// TestCloudExecProvider: seed 000's Provision VMs through an exec provider
// whose instances are real souls: create provisions two, they join the
// incarnation and the destiny runs on them, state names them; a re-run
// creates nothing; check mode says what it would create; scale grows to
// three; destroy deletes them and forgets their souls. No join token is
// in any result, the audit log or the database file.
func TestCloudExecProvider(t *testing.T) {
	r := newCloudRig(t)
	r.provider("procs", "", "30s")
	if _, err := r.c.SetCloudProfile(r.ctx, "small", apitypes.CloudProfileRequest{Provider: "procs", Covens: []string{"cloud"}}); err != nil {
		t.Fatal(err)
	}
	r.register("cloud-web", "../../examples/cloud-web")
	input := map[string]any{"provider": "procs", "profile": "small"}
	acc, err := r.c.CreateIncarnation(r.ctx, apitypes.CreateIncarnationRequest{Name: "shop", Service: "cloud-web", Covens: []string{"web"}, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	created := r.awaitRun(acc.ApplyID, 90*time.Second)
	if created.Status != store.RunSucceeded {
		t.Fatalf("create: %s (%s)\n%s", created.Status, created.Error, runJSON(created))
	}
	two := []string{"shop-small-1", "shop-small-2"}
	inc, err := r.c.GetIncarnation(r.ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inc.Members, two) || inc.Status != store.IncarnationReady || inc.State["instances"] != float64(2) {
		t.Fatalf("after create: members %v, status %s, state %v", inc.Members, inc.Status, inc.State)
	}
	if hs, _ := inc.State["hosts"].([]any); len(hs) != 2 || hs[0] != "shop-small-1" {
		t.Fatalf("state hosts = %v", inc.State["hosts"])
	}
	vm := hosts(created, "Provision VMs")["@keeper"]
	if !vm.Changed || !strings.Contains(vm.Msg, "created shop-small-1, shop-small-2") {
		t.Errorf("Provision VMs: %+v", vm)
	}
	if list, _ := vm.Data["instances"].([]any); len(list) != 2 {
		t.Errorf("result instances = %v", vm.Data["instances"])
	} else if in := list[0].(map[string]any); in["sid"] != "shop-small-1" || !strings.HasPrefix(in["id"].(string), "proc-") || in["address"] != "127.0.0.1" {
		t.Errorf("result instance = %v", in)
	}
	for _, n := range two {
		s, err := r.c.GetSoul(r.ctx, n)
		if err != nil || s.Status != store.SoulConnected || !slices.Equal(s.Covens, []string{"cloud", "web"}) {
			t.Errorf("soul %s: %+v %v", n, s, err)
		}
		b, err := os.ReadFile(filepath.Join(r.procs, n, "root", "etc/cloud-web/host"))
		if want := n + " of shop (2 members)\n"; err != nil || string(b) != want {
			t.Errorf("%s's host card = %q, %v; want %q", n, b, err, want)
		}
	}
	if h := hosts(created, "Apply base config everywhere"); len(h) != 2 {
		t.Errorf("the destiny ran on %d hosts, want the 2 new ones", len(h))
	}
	pids := []string{r.pid("shop-small-1"), r.pid("shop-small-2")}
	r.noToken("the create run", created)

	again := r.runOn("shop", "create", input, false)
	vm = hosts(again, "Provision VMs")["@keeper"]
	if again.Status != store.RunSucceeded || vm.Changed || len(vm.Data["created"].([]any)) != 0 {
		t.Fatalf("re-run: %s %s, Provision VMs %+v", again.Status, again.Error, vm)
	}
	if now := []string{r.pid("shop-small-1"), r.pid("shop-small-2")}; !slices.Equal(now, pids) {
		t.Errorf("the re-run replaced instances: pids %v, were %v", now, pids)
	}
	for sid, h := range hosts(again, "Apply base config everywhere") {
		if h.Changed {
			t.Errorf("re-run changed %s", sid)
		}
	}

	check := r.runOn("shop", "create", map[string]any{"provider": "procs", "profile": "small", "count": 3}, true)
	vm = hosts(check, "Provision VMs")["@keeper"]
	if check.Status != store.RunSucceeded || !vm.Changed || !strings.Contains(vm.Msg, "would create 1 instance(s)") || r.pid("shop-small-3") != "" {
		t.Fatalf("check run: %s %s, %+v, pid %q", check.Status, check.Error, vm, r.pid("shop-small-3"))
	}

	scaled := r.runOn("shop", "scale", input, false)
	if scaled.Status != store.RunSucceeded {
		t.Fatalf("scale: %s (%s)\n%s", scaled.Status, scaled.Error, runJSON(scaled))
	}
	three := append(slices.Clone(two), "shop-small-3")
	inc, _ = r.c.GetIncarnation(r.ctx, "shop")
	if !slices.Equal(inc.Members, three) || inc.State["instances"] != float64(3) || len(hosts(scaled, "Apply base config everywhere")) != 3 {
		t.Fatalf("after scale: members %v, state %v", inc.Members, inc.State)
	}
	if got := r.instances("shop"); len(got) != 3 {
		t.Fatalf("recorded instances %v", got)
	}
	r.noToken("the scale run", scaled)

	retire := map[string]any{"provider": "procs", "names": []string{"shop-small-3"}}
	checkRetire := r.runOn("shop", "retire", retire, true)
	if rv := hosts(checkRetire, "Retire VMs")["@keeper"]; checkRetire.Status != store.RunSucceeded || !rv.Changed || !strings.Contains(rv.Msg, "would delete shop-small-3") || r.pid("shop-small-3") == "" {
		t.Fatalf("check retire: %s %s %+v", checkRetire.Status, checkRetire.Error, rv)
	}
	retired := r.runOn("shop", "retire", retire, false)
	inc, _ = r.c.GetIncarnation(r.ctx, "shop")
	if retired.Status != store.RunSucceeded || !slices.Equal(inc.Members, two) || inc.State["instances"] != float64(2) || len(hosts(retired, "Apply base config everywhere")) != 2 {
		t.Fatalf("retire: %s %s, members %v, state %v", retired.Status, retired.Error, inc.Members, inc.State)
	}
	if r.pid("shop-small-3") != "" {
		t.Error("core.cloud.absent left shop-small-3 running")
	}
	if _, err := r.c.GetSoul(r.ctx, "shop-small-3"); err == nil {
		t.Error("core.cloud.absent left the soul of shop-small-3 registered")
	}
	three = two

	// Deleting without destroy would orphan the hosts: refused.
	if err := r.c.DeleteIncarnation(r.ctx, "shop"); err == nil || !strings.Contains(err.Error(), "destroy=true") {
		t.Fatalf("delete without destroy: %v", err)
	}
	if err := r.c.Do(r.ctx, "DELETE", "/v1/incarnations/shop", map[string][]string{"destroy": {"true"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range three {
		if r.pid(n) != "" {
			t.Errorf("instance %s survived destroy", n)
		}
		if _, err := r.c.GetSoul(r.ctx, n); err == nil {
			t.Errorf("soul %s still registered after destroy", n)
		}
	}
	if got := r.instances(""); len(got) != 0 {
		t.Errorf("instances after destroy: %v", got)
	}
	audit, err := r.c.ListAudit(r.ctx, apitypes.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	r.noToken("the audit log", audit)
	db, err := os.ReadFile(filepath.Join(r.dir, "keeper", "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(db), "SSJ1.") {
		t.Error("the database file holds a join token")
	}
}
