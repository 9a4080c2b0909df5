package ansible

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/catalog/catalogtest"
	"github.com/soulstack/soulstack/internal/lab"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// rig is the lab (one systemd host per role, named after it) with a Keeper
// on its machine side. Each role's test installs the soul in its own host.
type rig struct {
	lab     *lab.Lab
	keeper  *keeperProc
	api     *apiclient.Client
	soulURL string // the Keeper as souls reach it (https)
	logDir  string
}

// newRig boots the lab and starts and initializes the Keeper. Everything is
// torn down when t ends: the Keeper by its PID, then the lab (its hosts'
// processes die with their namespaces).
func newRig(t *testing.T, hosts []string, pkgs []string) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	r := &rig{logDir: logDir(t)}
	start := time.Now()
	l, err := lab.New(ctx, lab.Config{Name: labName(), Hosts: len(hosts), HostNames: hosts, Packages: pkgs, Flavour: lab.FlavourSystemd})
	if err != nil {
		t.Fatalf("building the lab: %v", err)
	}
	r.lab = l
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	st := l.Stats()
	t.Logf("lab %s: %d systemd hosts up in %v (base %v built=%v, repo %v built=%v, hosts %v)", labName(), len(hosts),
		since(start), st.Base.Round(time.Millisecond), st.BaseBuilt, st.Repo.Round(time.Millisecond), st.RepoBuilt,
		st.Hosts.Round(time.Millisecond))

	gw := l.GatewayIP()
	r.keeper = newKeeperProc(r.logDir, testutil.FreeAddrOn(t, gw))
	token, err := r.keeper.init(ctx, gw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.keeper.stop(10 * time.Second); err != nil {
			t.Errorf("stopping the keeper: %v", err)
		}
	})
	if err := r.keeper.start(); err != nil {
		t.Fatal(err)
	}
	// The Operator API is plain HTTP here: the listener sniffs, and the
	// traffic never leaves the machine.
	if r.api, err = apiclient.New("http://"+r.keeper.addr, token, apiclient.WithTimeout(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	r.soulURL = "https://" + r.keeper.addr
	eventually(t, 30*time.Second, "keeper ready on "+r.keeper.addr, func() error {
		if !r.keeper.running() {
			return fmt.Errorf("keeper exited: %v", r.keeper.err)
		}
		return r.api.Ready(ctx)
	})
	return r
}

// host returns the lab host named name.
func (r *rig) host(t *testing.T, name string) *lab.Host {
	t.Helper()
	h := r.lab.Host(name)
	if h == nil {
		t.Fatalf("no lab host %s", name)
	}
	return h
}

// soulUnit is the soul's unit, as the soulstack-soul package installs it.
const soulUnit = "soulstack-soul"

// soulUnitDropIn shortens the soul's reconnect delays, as an operator
// would tune an installed unit.
const soulUnitDropIn = `[Service]
ExecStart=
ExecStart=/usr/bin/soul run --keeper ${SOULSTACK_KEEPER} --data-dir /var/lib/soulstack/soul --reconnect-min 100ms --reconnect-max 1s --log-level debug
`

// installSoul installs the soul in h as users do (the soulstack-soul .deb,
// /etc/soulstack/soul.env with the Keeper and a join token that puts it in
// coven, systemctl enable --now) and waits until it is connected. Its SID
// is the host's name.
func (r *rig) installSoul(t *testing.T, h *lab.Host, coven string) {
	t.Helper()
	ctx := t.Context()
	jt, err := r.api.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{coven}, TTL: apitypes.Duration(time.Hour), MaxUses: 1})
	if err != nil {
		t.Fatalf("creating a join token: %v", err)
	}
	if err := h.CopyIn(soulDeb, "/root/soulstack-soul.deb"); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := h.Exec(ctx, "dpkg -i /root/soulstack-soul.deb"); err != nil {
		t.Fatalf("dpkg -i soulstack-soul: %v\n%s", err, stderr)
	}
	env := fmt.Sprintf("SOULSTACK_KEEPER=%s\nSOUL_JOIN_TOKEN=%s\n", r.soulURL, jt.Token)
	if err := h.WriteFile("/etc/systemd/system/"+soulUnit+".service.d/test.conf", []byte(soulUnitDropIn), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.WriteFile("/etc/soulstack/soul.env", []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := h.Exec(ctx, "systemctl daemon-reload && systemctl enable --now "+soulUnit); err != nil {
		t.Fatalf("starting %s: %v\n%s", soulUnit, err, stderr)
	}
	// Its journal is the first thing to read when a run goes wrong.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, _, _ := h.Exec(ctx, "journalctl -u "+soulUnit+" --no-pager -q -o short-precise | tail -100")
		_ = os.WriteFile(filepath.Join(r.logDir, "soul-"+h.Name()+".journal.log"), []byte(out), 0o644)
	})
	eventually(t, 60*time.Second, "the soul of "+h.Name()+" to connect", func() error {
		souls, err := r.api.ListSouls(ctx, apitypes.SoulQuery{})
		if err != nil {
			return err
		}
		for _, s := range souls {
			if s.SID == h.Name() && s.Status == store.SoulConnected {
				return nil
			}
		}
		return fmt.Errorf("not connected yet")
	})
}

// registerService commits the repository in dir (as its author would) to
// a fresh local git repository and registers it as service name; the
// Keeper materializes it over file://.
func (r *rig) registerService(t *testing.T, name, dir string) apitypes.Service {
	t.Helper()
	files := map[string]string{}
	var exec []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(data)
		if info, err := d.Info(); err == nil && info.Mode().Perm()&0o111 != 0 {
			exec = append(exec, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	repo := catalogtest.NewRepo(t)
	commit := repo.CommitExec(files, exec, "soulctl import ansible "+name)
	svc, err := r.api.RegisterService(t.Context(), apitypes.RegisterServiceRequest{Name: name, Git: "file://" + repo.Dir, Ref: "master"})
	if err != nil {
		t.Fatalf("registering %s: %v", name, err)
	}
	if svc.Commit != commit {
		t.Fatalf("service %s at commit %s, want %s", name, svc.Commit, commit)
	}
	return svc
}

// runTimeout bounds one scenario run; the first create installs packages.
const runTimeout = 5 * time.Minute

// create runs scenario create on incarnation inc (creating it, of service
// svc on the souls of coven, the first time) and waits until it ends.
func (r *rig) create(t *testing.T, inc, svc, coven string, first bool) apitypes.RunDetail {
	t.Helper()
	ctx := t.Context()
	var acc apitypes.Accepted
	var err error
	if first {
		acc, err = r.api.CreateIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: inc, Service: svc, Covens: []string{coven}})
	} else {
		acc, err = r.api.StartRun(ctx, inc, apitypes.StartRunRequest{Scenario: "create"})
	}
	if err != nil {
		t.Fatalf("starting create of %s: %v", inc, err)
	}
	var run apitypes.RunDetail
	eventually(t, runTimeout, "run "+acc.ApplyID+" to end", func() error {
		if run, err = r.api.GetRun(ctx, acc.ApplyID); err != nil {
			return err
		}
		switch run.Status {
		case store.RunSucceeded, store.RunFailed, store.RunAborted, store.RunCancelled:
			return nil
		}
		return fmt.Errorf("run is %s", run.Status)
	})
	return run
}

// logDir returns a directory for the Keeper's data and the logs. It is
// removed after a passing test and kept after a failing one, whose log
// tails are printed.
func logDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "soulstack-ansible-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
			return
		}
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			// The Keeper logs every API call; the test polls.
			lines := slices.DeleteFunc(strings.Split(strings.TrimRight(string(data), "\n"), "\n"),
				func(l string) bool { return strings.Contains(l, `msg="http request"`) })
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			t.Logf("--- last lines of %s:\n%s", path, strings.Join(lines, "\n"))
			return nil
		})
		t.Logf("keeper data and logs kept in %s", dir)
	})
	return dir
}

// eventually retries f every 200ms until it returns nil, and fails the
// test with f's last error after within.
func eventually(t *testing.T, within time.Duration, what string, f func() error) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("timed out after %v waiting for %s: %v", within, what, errors.Join(err, ctx.Err()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// since is the time since start, rounded for logs.
func since(start time.Time) time.Duration { return time.Since(start).Round(time.Millisecond) }
