package bench

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/lab"
)

// realisticLab is the lab of BenchmarkRealisticLab (fixed, so a crashed
// run's leftovers go with the next one).
const realisticLab = "bench-realistic"

// realisticPackages are made installable in the hosts: sshd, Python and
// python3-apt for Ansible, nginx and haproxy for the workload.
var realisticPackages = []string{"openssh-server", "python3", "python3-apt", "nginx", "haproxy"}

// realisticFloor is what the realistic create does, as one shell script
// run by hand on a host: the floor neither tool can beat.
const realisticFloor = `set -e
echo "start $EPOCHREALTIME"
printf 'Types: deb\nURIs: file:/srv/lab-repo\nSuites: ./\nTrusted: yes\n' > /etc/apt/sources.list.d/bench-lab.sources
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx haproxy >/dev/null
echo "installed $EPOCHREALTIME"
cat > /etc/nginx/nginx.conf.new <<'X'
%s
X
nginx -t -q -c /etc/nginx/nginx.conf.new && mv /etc/nginx/nginx.conf.new /etc/nginx/nginx.conf
cat > /etc/haproxy/haproxy.cfg.new <<'X'
%s
X
haproxy -c -q -f /etc/haproxy/haproxy.cfg.new && mv /etc/haproxy/haproxy.cfg.new /etc/haproxy/haproxy.cfg
sed -i '1i ClientAliveInterval 300' /etc/ssh/sshd_config && sshd -t
cat > /etc/systemd/system/bench-app.service <<'X'
[Unit]
Description=bench app (python http.server)
After=network.target
[Service]
WorkingDirectory=/var/www/html
ExecStart=/usr/bin/python3 -m http.server 8081 --bind 127.0.0.1
Restart=on-failure
[Install]
WantedBy=multi-user.target
X
systemctl daemon-reload && systemctl enable -q --now bench-app.service
for i in $(seq 300); do (echo > /dev/tcp/127.0.0.1/8081) 2>/dev/null && break; [ $i = 300 ] && exit 1; sleep 0.1; done
systemctl restart nginx haproxy
echo "end $EPOCHREALTIME"
`

// BenchmarkRealisticLab is issue 23's realistic create on systemd lab
// hosts: the ten tasks of bench/realistic/soulstack (a Soul Stack
// service) and of bench/realistic/ansible/site.yml (the same as an Ansible
// playbook), first run and no-op re-run, next to the floor — the same
// package installs and file writes as one shell script per host, all hosts
// in parallel. The lab has 3 × $SOULSTACK_BENCH_REALISTIC_HOSTS (default
// 5) fresh hosts of one image: the first third run souls, the second sshd
// for Ansible (tuned: forks = hosts, no facts, pipelining), the last get
// the script. Each tool's controller CPU seconds and peak RSS are logged
// next to its wall time: Ansible's from wait4's rusage (ansible-playbook
// and its forks; ssh ControlPersist masters detach and are not counted),
// the keeper's from /proc/self of this process (peak RSS reset through
// clear_refs before each run; the process holds the test harness too).
//
// It needs root and ansible-playbook (apt-get install ansible-core) and
// is skipped unless $SOULSTACK_BENCH_LAB is set.
func BenchmarkRealisticLab(b *testing.B) {
	if os.Getenv("SOULSTACK_BENCH_LAB") == "" {
		b.Skip("set SOULSTACK_BENCH_LAB=1 to build a lab of Debian hosts (root; minutes)")
	}
	if os.Geteuid() != 0 {
		b.Skip("needs root: lab hosts are network namespaces with their own root filesystems")
	}
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		b.Skip("ansible-playbook not found (apt-get install ansible-core)")
	}
	n := envInt(b, "SOULSTACK_BENCH_REALISTIC_HOSTS", 5)
	noops := envInt(b, "SOULSTACK_BENCH_REALISTIC_NOOPS", 3)
	floorLast := os.Getenv("SOULSTACK_BENCH_REALISTIC_FLOOR_LAST") == "1"
	ctx := context.Background()
	start := time.Now()
	l, err := lab.New(ctx, lab.Config{Name: realisticLab, Hosts: 3 * n, Packages: realisticPackages, Flavour: lab.FlavourSystemd})
	if err != nil {
		b.Fatalf("building the lab: %v", err)
	}
	b.Cleanup(func() {
		if err := l.Close(); err != nil {
			b.Errorf("closing the lab: %v", err)
		}
	})
	b.Logf("lab of %d systemd hosts up in %s", 3*n, time.Since(start).Round(time.Millisecond))
	hosts := l.Hosts()
	souls, ans, floor := hosts[:n], hosts[n:2*n], hosts[2*n:]

	dir := b.TempDir()
	key, pub := sshKeyPair(b, dir)
	start = time.Now()
	onHosts(b, hosts, 4, func(h *lab.Host) error {
		if _, stderr, err := h.Exec(ctx, "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server python3 python3-apt >/dev/null && "+
			"mkdir -p /root/.ssh && chmod 700 /root/.ssh && systemctl enable -q --now ssh"); err != nil {
			return fmt.Errorf("%s: installing: %v: %s", h.Name(), err, stderr)
		}
		return h.WriteFile("/root/.ssh/authorized_keys", pub, 0o600)
	})
	b.Logf("sshd, python3 and python3-apt in every host in %s", time.Since(start).Round(time.Millisecond))

	files := readServiceDir(b, "realistic/soulstack")
	gw := l.GatewayIP()
	e := startKeeperOn(b, net.JoinHostPort(gw, "0"), func(k *config.Keeper) { k.TLS.Hosts = []string{gw} })
	e.registerService("realistic", files)
	e.startSoulsOn(souls, "realistic", filepath.Join(dir, "logs"))

	// The three sides read the same .debs from the lab's repository: read
	// them once first so that none pays for a cold page cache.
	if _, stderr, err := souls[0].Exec(ctx, "cat /srv/lab-repo/*.deb >/dev/null"); err != nil {
		b.Fatalf("warming the page cache: %v: %s", err, stderr)
	}

	for b.Loop() {
		// The floor — the script by hand, all hosts at once — runs right
		// before Soul Stack (right after it with
		// $SOULSTACK_BENCH_REALISTIC_FLOOR_LAST=1, to see what the order
		// does): the closest in time, so the machine's load is alike.
		// Ansible comes last.
		runFloor := func() time.Duration {
			b.Logf("load average before the floor: %s", loadAvg())
			script := fmt.Sprintf(realisticFloor, renderFor(files["scenario/create/templates/nginx.conf.tmpl"]),
				renderFor(files["scenario/create/templates/haproxy.cfg.tmpl"]))
			t0 := time.Now()
			onHosts(b, floor, len(floor), func(h *lab.Host) error {
				// bash, not Exec's sh: the wait loop uses /dev/tcp.
				cmd, err := h.Command(ctx, "/bin/bash", "-c", strings.ReplaceAll(script, "@SID@", h.Name()))
				if err != nil {
					return err
				}
				out, err := cmd.CombinedOutput()
				if err != nil {
					return fmt.Errorf("%s: floor script: %v: %s", h.Name(), err, tail(string(out), 2000))
				}
				b.Logf("  floor %s: %s", h.Name(), strings.Join(strings.Fields(string(out)), " "))
				return nil
			})
			d := time.Since(t0)
			b.Logf("floor (shell script per host, all in parallel): %s", d.Round(time.Millisecond))
			return d
		}
		var fl time.Duration
		if !floorLast {
			fl = runFloor()
		}

		// Soul Stack.
		b.Logf("load average before Soul Stack: %s", loadAvg())
		var first runTiming
		fm := measureSelf(b, func() {
			first, err = e.createIncarnation(ctx, apitypes.CreateIncarnationRequest{Name: "realistic", Service: "realistic", Covens: []string{"realistic"}})
		})
		if err != nil {
			b.Fatalf("soul stack first run: %v", err)
		}
		if err := e.expectChanged(ctx, "realistic", 0); err == nil {
			b.Fatal("soul stack first run changed nothing")
		}
		b.Logf("soul stack first run: %s; %s", first.Total.Round(time.Millisecond), fm)
		e.logTaskSpans(b, ctx, "realistic")
		var soulNoop []time.Duration
		for i := range noops {
			var rt runTiming
			m := measureSelf(b, func() { rt, err = e.runScenario(ctx, "realistic", "create", nil) })
			if err != nil {
				b.Fatalf("soul stack no-op re-run: %v", err)
			}
			if err := e.expectChanged(ctx, "realistic", 0); err != nil {
				b.Fatalf("soul stack no-op re-run: %v", err)
			}
			soulNoop = append(soulNoop, rt.Total)
			b.Logf("soul stack no-op %d: %s; %s", i+1, rt.Total.Round(time.Millisecond), m)
		}

		if floorLast {
			fl = runFloor()
		}

		// Ansible, tuned.
		b.Logf("load average before Ansible: %s", loadAvg())
		a := newRealisticAnsible(b, ans, dir, key)
		af, changed, am := a.play(b)
		if changed == 0 {
			b.Fatal("ansible first run changed nothing")
		}
		b.Logf("ansible first run: %s (changed=%d); %s", af.Round(time.Millisecond), changed, am)
		var ansNoop []time.Duration
		for i := range noops {
			d, changed, m := a.play(b)
			if changed != 0 {
				b.Fatalf("ansible no-op re-run changed %d", changed)
			}
			ansNoop = append(ansNoop, d)
			b.Logf("ansible no-op %d: %s; %s", i+1, d.Round(time.Millisecond), m)
		}

		b.Logf("load average after Ansible: %s", loadAvg())

		// Every host of the three ends up serving: app, nginx and haproxy
		// (within 10 s: haproxy's first check of nginx follows its restart).
		onHosts(b, hosts, 4, func(h *lab.Host) error {
			if out, stderr, err := h.Exec(ctx, "systemctl is-active bench-app nginx haproxy && systemctl is-enabled -q bench-app && for i in $(seq 50); do python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8080/\")' 2>/dev/null && exit 0; sleep 0.2; done; exit 1"); err != nil {
				return fmt.Errorf("%s: not serving: %v: %s %s", h.Name(), err, out, stderr)
			}
			return nil
		})

		sn, an := median(soulNoop), median(ansNoop)
		b.ReportMetric(ms(first.Total), "first-ms")
		b.ReportMetric(ms(af), "first-ansible-ms")
		b.ReportMetric(ms(fl), "floor-ms")
		b.ReportMetric(float64(first.Total)/float64(fl), "first-x-floor")
		b.ReportMetric(float64(af)/float64(fl), "ansible-first-x-floor")
		b.ReportMetric(ms(sn), "noop-ms")
		b.ReportMetric(ms(an), "noop-ansible-ms")
		b.ReportMetric(float64(an)/float64(sn), "noop-x-ansible")
	}
}

// loadAvg is the machine's 1, 5 and 15 minute load averages.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error()
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// onHosts runs f on hosts, at most par at a time, failing b on errors.
func onHosts(b *testing.B, hosts []*lab.Host, par int, f func(*lab.Host) error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, par)
	for _, h := range hosts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(h); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		b.Fatal(errs)
	}
}

// renderFor fills the benchmark's templates the way the scenario does,
// for the floor script (the host's name stays @SID@ until per host).
func renderFor(tmpl string) string {
	return strings.NewReplacer("{{ .soulprint.self.sid }}", "@SID@", "{{ .essence.app_port }}", "8081", "{{ .essence.front_port }}", "8080").Replace(strings.TrimSuffix(tmpl, "\n"))
}

// readServiceDir reads a service directory of this package into the file
// map registerService commits, checking it loads.
func readServiceDir(b testing.TB, dir string) map[string]string {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, problems := dsl.LoadFS(mapFS(files)); problems.Err() != nil {
		b.Fatalf("%s: %v", dir, problems.Err())
	}
	return files
}

// startSoulsOn starts `soul run` in hosts (SID = host name, coven) and
// waits until all are connected.
func (e *env) startSoulsOn(hosts []*lab.Host, coven, logDir string) {
	ctx := context.Background()
	bin := soulBinary(e.tb)
	tok := e.joinToken(coven)
	names := map[string]bool{}
	for _, h := range hosts {
		names[h.Name()] = true
		if err := h.CopyIn(bin, "/usr/local/bin/soul"); err != nil {
			e.tb.Fatal(err)
		}
		p, err := h.Start(ctx, []string{"/usr/local/bin/soul", "run", "--keeper", "https://" + e.addr, "--sid", h.Name(),
			"--data-dir", "/var/lib/soul", "--join-token", tok, "--log-level", "warn"}, filepath.Join(logDir, "soul-"+h.Name()+".log"))
		if err != nil {
			e.tb.Fatal(err)
		}
		e.tb.Cleanup(func() { _ = p.Kill() })
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := 0
		for _, sid := range e.k.Gateway().ConnectedSIDs() {
			if names[sid] {
				got++
			}
		}
		if got == len(hosts) {
			return
		}
		if time.Now().After(deadline) {
			e.tb.Fatalf("%d of %d lab souls connected", got, len(hosts))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ctlUse is a controller's CPU time and peak RSS over one run.
type ctlUse struct {
	CPU  time.Duration
	Peak int64 // bytes
}

func (u ctlUse) String() string {
	return fmt.Sprintf("controller CPU %.2f s, peak RSS %.0f MiB", u.CPU.Seconds(), mib(u.Peak))
}

// measureSelf is this process's CPU time (getrusage, microseconds) and
// peak RSS during f (VmHWM reset first by writing 5 to
// /proc/self/clear_refs). Children are not counted: the souls run in the
// lab hosts, not in this process.
func measureSelf(tb testing.TB, f func()) ctlUse {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Logf("resetting the peak RSS: %v", err)
	}
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		tb.Fatal(err)
	}
	f()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		tb.Fatal(err)
	}
	st, err := readProc(os.Getpid())
	if err != nil {
		tb.Fatal(err)
	}
	cpu := func(r syscall.Rusage) int64 { return syscall.TimevalToNsec(r.Utime) + syscall.TimevalToNsec(r.Stime) }
	return ctlUse{CPU: time.Duration(cpu(after) - cpu(before)), Peak: st.HWM}
}

// realisticAnsible runs site.yml against the Ansible third of the lab.
type realisticAnsible struct {
	dir string
	n   int
}

func newRealisticAnsible(b *testing.B, hosts []*lab.Host, dir, key string) *realisticAnsible {
	a := &realisticAnsible{dir: filepath.Join(dir, "realistic-ansible"), n: len(hosts)}
	if err := os.CopyFS(a.dir, os.DirFS("realistic/ansible")); err != nil {
		b.Fatal(err)
	}
	var inv strings.Builder
	inv.WriteString("[lab]\n")
	for _, h := range hosts {
		fmt.Fprintf(&inv, "%s ansible_host=%s\n", h.Name(), h.IP())
	}
	fmt.Fprintf(&inv, "\n[lab:vars]\nansible_user=root\nansible_ssh_private_key_file=%s\n", key)
	for name, content := range map[string]string{"inventory": inv.String(),
		"ansible.cfg": "[defaults]\nhost_key_checking = False\nretry_files_enabled = False\n"} {
		if err := os.WriteFile(filepath.Join(a.dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return a
}

// play runs site.yml once, tuned, and returns its wall time, the sum of
// changed= of its recap and its controller use.
func (a *realisticAnsible) play(b *testing.B) (time.Duration, int, ctlUse) {
	cmd := exec.Command("ansible-playbook", "-i", "inventory", "-e", "target=lab", "site.yml")
	cmd.Dir = a.dir
	cmd.Env = append(os.Environ(), "ANSIBLE_CONFIG="+filepath.Join(a.dir, "ansible.cfg"), "ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORKS="+strconv.Itoa(a.n), "ANSIBLE_GATHERING=explicit", "ANSIBLE_PIPELINING=True", "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("ansible-playbook: %v\n%s", err, tail(string(out), 3000))
	}
	u := childUse(cmd)
	changed := 0
	for _, m := range changedRE.FindAllStringSubmatch(string(out), -1) {
		c, _ := strconv.Atoi(m[1])
		changed += c
	}
	return d, changed, u
}

// TestRealisticServiceLoads is the fast check of BenchmarkRealisticLab's
// Soul Stack side (it runs in `go test ./...`): the service passes the
// DSL's validation and its create scenario has the nine tasks that cover
// the ten items — nginx and haproxy in one core.pkg.installed task
// (one apt transaction, like the floor's apt-get install nginx haproxy).
func TestRealisticServiceLoads(t *testing.T) {
	files := readServiceDir(t, "realistic/soulstack")
	svc, problems := dsl.LoadFS(mapFS(files))
	if err := problems.Err(); err != nil {
		t.Fatal(err)
	}
	if svc.Manifest.Name != "realistic" {
		t.Errorf("manifest name %q", svc.Manifest.Name)
	}
	create := svc.Scenarios["create"]
	if create == nil {
		t.Fatal("no create scenario")
	}
	var modules []string
	var pkgs []any
	var walk func([]*dsl.Task)
	walk = func(ts []*dsl.Task) {
		for _, task := range ts {
			if task.Module != "" {
				modules = append(modules, task.Module)
			}
			if task.Module == "core.pkg.installed" {
				pkgs = append(pkgs, task.Params["names"])
			}
			walk(task.Block)
		}
	}
	walk(create.Tasks)
	if len(modules) != 9 {
		t.Errorf("create has %d tasks (%v), want 9", len(modules), modules)
	}
	if fmt.Sprint(pkgs) != "[[nginx haproxy]]" {
		t.Errorf("package tasks install %v, want one task installing [nginx haproxy] (one apt transaction, as the floor)", pkgs)
	}
}

// logTaskSpans logs, per task of inc's latest run, the slowest host's
// duration and the span from its first start to its last finish: where
// the first run's wall time goes.
func (e *env) logTaskSpans(b *testing.B, ctx context.Context, inc string) {
	rs, err := e.latestResults(ctx, inc)
	if err != nil {
		b.Fatal(err)
	}
	type span struct {
		first, last time.Time
		slowest     time.Duration
	}
	var order []string
	spans := map[string]*span{}
	for _, r := range rs {
		s, ok := spans[r.TaskName]
		if !ok {
			s = &span{first: r.StartedAt, last: r.FinishedAt}
			spans[r.TaskName] = s
			order = append(order, r.TaskName)
		}
		if r.StartedAt.Before(s.first) {
			s.first = r.StartedAt
		}
		if r.FinishedAt.After(s.last) {
			s.last = r.FinishedAt
		}
		s.slowest = max(s.slowest, r.FinishedAt.Sub(r.StartedAt))
	}
	for _, name := range order {
		s := spans[name]
		b.Logf("  task %-45q span %7s, slowest host %7s", name, s.last.Sub(s.first).Round(time.Millisecond), s.slowest.Round(time.Millisecond))
	}
}
