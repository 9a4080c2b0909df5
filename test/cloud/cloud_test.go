// Package cloud proves seed 000's Provision VMs step on real hosts: the
// example service examples/cloud-web provisions systemd lab hosts through
// a provider of kind local (booted from a root filesystem, bootstrapped
// with the Keeper's install.sh and a one-time join token), applies a
// destiny on them and commits state naming them; scale grows the set;
// destroy deletes the hosts.
//
// The test needs root; without it it skips, except in CI (CI=true).
package cloud

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

var bins map[string]string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	_, b, cleanup, err := testutil.BuildStaticBinaries("github.com/soulstack/soulstack/cmd/soul", "github.com/soulstack/soulstack/cmd/keeper")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins = b
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("the local cloud provider test needs root (systemd lab hosts); CI must run it as root")
	}
	t.Skip("skipping: the local cloud provider test needs root (systemd lab hosts); run: sudo go test ./test/cloud")
}

// rootfs makes a root filesystem for the local provider: the lab's
// systemd base with curl (install.sh needs it) unpacked from the lab's
// package cache.
func rootfs(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := lab.New(ctx, lab.Config{Name: "cloud19-prep", Hosts: 1, Flavour: lab.FlavourSystemd, Packages: []string{"curl"}})
	if err != nil {
		t.Fatalf("finding the lab's base and curl: %v", err)
	}
	base, repo := l.BaseDir(), l.RepoDir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rootfs")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("cp", "-a", base, dir)
	debs, _ := filepath.Glob(filepath.Join(repo, "*.deb"))
	for _, d := range debs {
		run("dpkg-deb", "-x", d, dir)
	}
	run("chroot", dir, "/sbin/ldconfig")
	return dir
}

type rig struct {
	t   *testing.T
	ctx context.Context
	c   *apiclient.Client
}

func (r *rig) await(id string) apitypes.RunDetail {
	r.t.Helper()
	var run apitypes.RunDetail
	testutil.WaitFor(r.t, 5*time.Minute, func() bool {
		var err error
		run, err = r.c.GetRun(r.ctx, id)
		return err == nil && (run.Status == store.RunSucceeded || run.Status == store.RunFailed || run.Status == store.RunAborted || run.Status == store.RunCancelled)
	}, "run %s to end", id)
	return run
}

func (r *rig) run(scenario string) apitypes.RunDetail {
	r.t.Helper()
	acc, err := r.c.StartRun(r.ctx, "web", apitypes.StartRunRequest{Scenario: scenario})
	if err != nil {
		r.t.Fatal(err)
	}
	return r.await(acc.ApplyID)
}

func task(run apitypes.RunDetail, name string) []apitypes.RunHost {
	for _, t := range run.Tasks {
		if t.Name == name {
			return t.Hosts
		}
	}
	return nil
}

// TestCloudLocal runs examples/cloud-web on provider kind local: create
// boots two systemd hosts, installs their souls with install.sh, and the
// destiny writes a host card on each; a re-run creates and changes
// nothing; scale adds a third; destroy deletes all three.
func TestCloudLocal(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	fs0 := rootfs(t)
	t.Logf("rootfs ready in %v", time.Since(start).Round(time.Millisecond))

	soulDir := t.TempDir()
	b, err := os.ReadFile(bins["soul"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(soulDir, "soul-linux-"+runtime.GOARCH), b, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kc := config.Default()
	kc.DataDir = filepath.Join(t.TempDir(), "keeper")
	kc.ShutdownTimeout = config.Duration(2 * time.Second)
	kc.SoulDir = soulDir
	ini, err := keeper.Init(ctx, keeper.InitOptions{Keeper: kc, ArchonName: "root"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	k, err := keeper.New(ctx, keeper.Config{Keeper: kc, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// Every address: the hosts reach the Keeper at their lab's bridge
	// address, which exists only once their lab does.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- k.Serve(kctx, ln) }()
	r := &rig{t: t, ctx: ctx}
	t.Cleanup(func() {
		// Whatever is left (a failed test) is destroyed before the keeper goes.
		for _, inc := range []string{"web", "x"} {
			_ = r.c.Do(ctx, "DELETE", "/v1/incarnations/"+inc, map[string][]string{"destroy": {"true"}}, nil, nil)
		}
		stop()
		<-done
		k.Close()
		if t.Failed() {
			t.Logf("keeper logs:\n%s", logs)
		}
	})
	port := ln.Addr().(*net.TCPAddr).Port
	r.c, err = apiclient.New(fmt.Sprintf("http://127.0.0.1:%d", port), ini.Token.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.SetCloudProvider(ctx, "lab", apitypes.CloudProviderRequest{Kind: "local"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.SetCloudProfile(ctx, "labhost", apitypes.CloudProfileRequest{Provider: "lab", Spec: map[string]any{"rootfs": fs0}, Covens: []string{"labhost"}}); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	src := "../../examples/cloud-web"
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(src, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	repo := catalogtest.NewRepo(t)
	repo.Commit(files, "cloud-web")
	if _, err := r.c.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: "cloud-web", Git: repo.Dir, Ref: "master"}); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	acc, err := r.c.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "web", Service: "cloud-web", Covens: []string{"web"}})
	if err != nil {
		t.Fatal(err)
	}
	created := r.await(acc.ApplyID)
	if created.Status != store.RunSucceeded {
		t.Fatalf("create: %s (%s)", created.Status, created.Error)
	}
	t.Logf("create (2 local hosts booted, souls installed and joined, destiny applied) in %v", time.Since(start).Round(time.Millisecond))
	two := []string{"web-labhost-1", "web-labhost-2"}
	inc, _ := r.c.GetIncarnation(ctx, "web")
	if !slices.Equal(inc.Members, two) || inc.State["instances"] != float64(2) {
		t.Fatalf("after create: members %v state %v", inc.Members, inc.State)
	}
	l, err := lab.Attach(firstLab(t, r, "web-labhost-1"))
	if err != nil {
		t.Fatal(err)
	}
	h := l.Hosts()[0]
	out, _, err := h.Exec(ctx, "cat /etc/cloud-web/host; systemctl is-active soulstack-soul; hostname")
	if err != nil || out != "web-labhost-1 of web (2 members)\nactive\nweb-labhost-1\n" {
		t.Fatalf("on the host: %q, %v", out, err)
	}
	if s, err := r.c.GetSoul(ctx, "web-labhost-1"); err != nil || !slices.Equal(s.Covens, []string{"labhost", "web"}) {
		t.Fatalf("soul: %+v %v", s, err)
	}

	again := r.run("create")
	if again.Status != store.RunSucceeded {
		t.Fatalf("re-run: %s (%s)", again.Status, again.Error)
	}
	for _, name := range []string{"Provision VMs", "Apply base config everywhere"} {
		for _, hr := range task(again, name) {
			if hr.Changed {
				t.Errorf("re-run: %s changed on %s: %s", name, hr.SID, hr.Msg)
			}
		}
	}

	start = time.Now()
	scaled := r.run("scale")
	if scaled.Status != store.RunSucceeded {
		t.Fatalf("scale: %s (%s)", scaled.Status, scaled.Error)
	}
	t.Logf("scale to 3 in %v", time.Since(start).Round(time.Millisecond))
	inc, _ = r.c.GetIncarnation(ctx, "web")
	if len(inc.Members) != 3 || inc.State["instances"] != float64(3) {
		t.Fatalf("after scale: %v %v", inc.Members, inc.State)
	}

	r.destroy("web")

	// The same through the exec kind: `keeper cloud-local` is an exec
	// provider of the repository's own driving local hosts, one process
	// per call (the hosts outlive it).
	if _, err := r.c.SetCloudProvider(ctx, "labx", apitypes.CloudProviderRequest{Kind: "exec", Config: map[string]any{
		"executable": bins["keeper"], "args": []string{"cloud-local", "--dir", filepath.Join(t.TempDir(), "labx")}, "timeout": "3m",
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.SetCloudProfile(ctx, "labxhost", apitypes.CloudProfileRequest{Provider: "labx", Spec: map[string]any{"rootfs": fs0}}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	acc, err = r.c.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "x", Service: "cloud-web", Covens: []string{"web"},
		Input: map[string]any{"provider": "labx", "profile": "labxhost", "count": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if run := r.await(acc.ApplyID); run.Status != store.RunSucceeded {
		t.Fatalf("create through keeper cloud-local: %s (%s)", run.Status, run.Error)
	}
	t.Logf("create of 1 host through the exec kind in %v", time.Since(start).Round(time.Millisecond))
	inc, _ = r.c.GetIncarnation(ctx, "x")
	if !slices.Equal(inc.Members, []string{"x-labxhost-1"}) {
		t.Fatalf("members %v", inc.Members)
	}
	r.destroy("x")
}

// destroy deletes incarnation inc with its instances and checks their
// hosts are gone.
func (r *rig) destroy(inc string) {
	r.t.Helper()
	list, _ := r.c.ListCloudInstances(r.ctx, inc)
	if err := r.c.Do(r.ctx, "DELETE", "/v1/incarnations/"+inc, map[string][]string{"destroy": {"true"}}, nil, nil); err != nil {
		r.t.Fatal(err)
	}
	if len(list) == 0 {
		r.t.Errorf("incarnation %s had no instances recorded", inc)
	}
	for _, in := range list {
		if _, err := lab.Attach(in.ID); err == nil || !strings.Contains(err.Error(), "not running") {
			r.t.Errorf("host %s (lab %s) survived destroy: %v", in.Name, in.ID, err)
		}
	}
}

// firstLab returns the lab (the instance id) of instance name.
func firstLab(t *testing.T, r *rig, name string) string {
	t.Helper()
	list, err := r.c.ListCloudInstances(r.ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.Name == name {
			return in.ID
		}
	}
	t.Fatalf("no instance %s in %+v", name, list)
	return ""
}
