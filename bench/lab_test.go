package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/lab"
)

// labName is fixed so that a crashed run's leftovers are removed by the
// next one (lab.New cleans up a lab of the same name).
const labName = "bench-ansible"

// labPackages are installed in every lab host: sshd and Python for
// Ansible (the souls need neither).
var labPackages = []string{"openssh-server", "python3"}

// The Ansible side of the comparison: the same operations as the web
// service's scenarios, as an ad-hoc command and two playbooks.
const (
	ansibleCreate = `- hosts: "{{ target }}"
  tasks:
    - name: site directory
      file: {path: "{{ site_dir }}", state: directory, mode: "0755"}
    - name: index page
      copy: {dest: "{{ site_dir }}/index.html", content: "release {{ release }} on {{ inventory_hostname }}\n", mode: "0644"}
    - name: site config
      template: {src: site.conf.j2, dest: "{{ site_dir }}/site.conf"}
`
	ansibleRollout = `- hosts: "{{ target }}"
  serial: 2
  tasks:
    - name: site directory
      file: {path: "{{ site_dir }}", state: directory, mode: "0755"}
    - name: index page
      copy: {dest: "{{ site_dir }}/index.html", content: "release {{ release }} on {{ inventory_hostname }}\n", mode: "0644"}
    - name: site config
      template: {src: site.conf.j2, dest: "{{ site_dir }}/site.conf"}
`
	ansibleTemplate = "server {{ inventory_hostname }}\nrelease {{ release }}\nroot {{ site_dir }}\n"
)

// BenchmarkVersusAnsibleLab is the honest form of SPEC §15's comparison:
// the same operations as BenchmarkVersusAnsible, on real hosts — a lab of
// $SOULSTACK_BENCH_LAB_HOSTS (default 20) Debian hosts in network
// namespaces, each with its own root filesystem, systemd 252 as PID 1
// ($SOULSTACK_BENCH_LAB_FLAVOUR=sysv: tini and init scripts), a real `soul
// run` and sshd (the host's ssh.service on systemd hosts) — done by Soul Stack (keeper in this process on the lab bridge) and
// by Ansible (ansible and ansible-playbook of the machine, over SSH as
// root), on all hosts and on the first $SOULSTACK_BENCH_LAB_SMALL (default
// 5). Ansible runs twice: with its defaults (forks 5, implicit fact
// gathering, interpreter discovery, no pipelining; SSH ControlPersist 60 s
// as shipped) and tuned (forks = hosts, no fact gathering, pipelining,
// python3 named; $SOULSTACK_BENCH_LAB_ANSIBLE_DEFAULTS=0 leaves the
// defaults out, which halves a round's time). One op is one round of every operation by each; the
// first round (cold SSH connections for Ansible) is kept in the logs.
// Next to each wall time it logs the controller's CPU time and peak RSS:
// the keeper's from this process (getrusage; peak RSS reset before each
// operation, and the process holds the harness too, so an upper bound),
// Ansible's from wait4's rusage of the ansible/ansible-playbook process and
// its forks (detached ssh ControlPersist masters are not counted).
//
// It needs root and is skipped unless $SOULSTACK_BENCH_LAB is set: building
// the lab (first time: downloading the packages) takes minutes. Without
// ansible-playbook in PATH only Soul Stack is measured.
func BenchmarkVersusAnsibleLab(b *testing.B) {
	if os.Getenv("SOULSTACK_BENCH_LAB") == "" {
		b.Skip("set SOULSTACK_BENCH_LAB=1 to build a lab of Debian hosts (root; minutes)")
	}
	if os.Geteuid() != 0 {
		b.Skip("needs root: lab hosts are network namespaces with their own root filesystems")
	}
	n := envInt(b, "SOULSTACK_BENCH_LAB_HOSTS", 20)
	small := min(n, envInt(b, "SOULSTACK_BENCH_LAB_SMALL", 5))
	withDefaults := os.Getenv("SOULSTACK_BENCH_LAB_ANSIBLE_DEFAULTS") != "0"
	flavour := os.Getenv("SOULSTACK_BENCH_LAB_FLAVOUR")
	if flavour == "" {
		flavour = lab.FlavourSystemd
	}
	ctx := context.Background()
	start := time.Now()
	l, err := lab.New(ctx, lab.Config{Name: labName, Hosts: n, Packages: labPackages, Flavour: flavour})
	if err != nil {
		b.Fatalf("building the lab: %v", err)
	}
	b.Cleanup(func() {
		if err := l.Close(); err != nil {
			b.Errorf("closing the lab: %v", err)
		}
	})
	b.Logf("lab of %d %s hosts up in %s (%+v)", n, flavour, time.Since(start).Round(time.Millisecond), l.Stats())

	dir := b.TempDir()
	key, pub := sshKeyPair(b, dir)
	start = time.Now()
	prepareHosts(b, l, flavour, pub, filepath.Join(dir, "logs"))
	b.Logf("sshd and python3 installed and started in %d hosts in %s", n, time.Since(start).Round(time.Millisecond))

	gw := l.GatewayIP()
	e := startKeeperOn(b, net.JoinHostPort(gw, "0"), func(k *config.Keeper) { k.TLS.Hosts = []string{gw} })
	e.registerService("web", webService)
	start = time.Now()
	e.startLabSouls(l, small, filepath.Join(dir, "logs"))
	b.Logf("%d souls connected in %s", n, time.Since(start).Round(time.Millisecond))

	an := newAnsible(b, l, dir, key)
	sizes := []int{small, n}
	if small == n {
		sizes = sizes[1:]
	}
	for _, size := range sizes {
		covens := []string{"lab"}
		if size == small && small < n {
			covens = []string{"lab-small"}
		}
		b.Run(fmt.Sprintf("hosts=%d", size), func(b *testing.B) {
			ss := map[string]timings{}
			su := map[string][]ctlUse{}
			var ad, at map[string][]time.Duration
			var au, tu map[string][]ctlUse
			if an != nil {
				ad, at = map[string][]time.Duration{}, map[string][]time.Duration{}
				au, tu = map[string][]ctlUse{}, map[string][]ctlUse{}
			}
			round := 0
			for b.Loop() {
				round++
				b.Logf("round %d: load average %s", round, loadAvg())
				rs, us, err := e.versusRound(ctx, fmt.Sprintf("lab%d-%d", size, round), covens, round, size)
				if err != nil {
					b.Fatal(err)
				}
				for op, rt := range rs {
					ss[op] = append(ss[op], rt)
					su[op] = append(su[op], us[op])
				}
				if an == nil {
					continue
				}
				if withDefaults {
					for op, r := range an.round(b, size, round, false) {
						ad[op] = append(ad[op], r.wall)
						au[op] = append(au[op], r.use)
					}
				}
				for op, r := range an.round(b, size, round, true) {
					at[op] = append(at[op], r.wall)
					tu[op] = append(tu[op], r.use)
				}
			}
			b.Logf("load average at the end: %s", loadAvg())
			reportVersus(b, ss)
			for _, op := range versusOps {
				soul := ms(ss[op].median(func(t runTiming) time.Duration { return t.Total }))
				sc, sp := useSummary(su[op])
				b.ReportMetric(ms(sc), op+"-cpu-ms")
				b.ReportMetric(mib(sp), op+"-peak-MiB")
				if an != nil {
					// Ansible's medians leave out round 1 (cold SSH connections).
					warm := func(xs []time.Duration) []time.Duration { return xs[min(1, len(xs)-1):] }
					tc, tp := useSummary(tu[op][min(1, len(tu[op])-1):])
					b.Logf("%s: soul stack %.0f ms (controller CPU %.3f s, peak RSS %.0f MiB); ansible tuned %v (CPU %.2f s, peak %.0f MiB)",
						op, soul, sc.Seconds(), mib(sp), roundAll(at[op]), tc.Seconds(), mib(tp))
					if withDefaults {
						ac, ap := useSummary(au[op][min(1, len(au[op])-1):])
						b.Logf("%s: ansible defaults %v (CPU %.2f s, peak %.0f MiB)", op, roundAll(ad[op]), ac.Seconds(), mib(ap))
						b.ReportMetric(ms(median(warm(ad[op]))), op+"-ansible-ms")
						b.ReportMetric(ms(median(warm(ad[op])))/soul, op+"-x-ansible-measured")
						b.ReportMetric(ms(ac), op+"-ansible-cpu-ms")
						b.ReportMetric(mib(ap), op+"-ansible-peak-MiB")
					}
					b.ReportMetric(ms(median(warm(at[op]))), op+"-ansible-tuned-ms")
					b.ReportMetric(ms(median(warm(at[op])))/soul, op+"-x-ansible-tuned")
					b.ReportMetric(ms(tc), op+"-ansible-tuned-cpu-ms")
					b.ReportMetric(mib(tp), op+"-ansible-tuned-peak-MiB")
				}
			}
		})
	}
}

// useSummary is the median CPU time and the largest peak RSS of us.
func useSummary(us []ctlUse) (cpu time.Duration, peak int64) {
	var cpus []time.Duration
	for _, u := range us {
		cpus = append(cpus, u.CPU)
		peak = max(peak, u.Peak)
	}
	if len(cpus) == 0 {
		return 0, 0
	}
	return median(cpus), peak
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// prepareHosts installs sshd and python3 in every host (from the lab's
// offline repository), authorizes pub for root and starts sshd: on systemd
// hosts as the host's own ssh.service, on sysv hosts as a process.
func prepareHosts(b *testing.B, l *lab.Lab, flavour string, pub []byte, logDir string) {
	ctx := context.Background()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, 4)
	for _, h := range l.Hosts() {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := func() error {
				if _, stderr, err := h.Exec(ctx, "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server python3 >/dev/null && "+
					"mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh && ssh-keygen -A"); err != nil {
					return fmt.Errorf("%s: installing: %v: %s", h.Name(), err, stderr)
				}
				if err := h.WriteFile("/root/.ssh/authorized_keys", pub, 0o600); err != nil {
					return err
				}
				if flavour == lab.FlavourSystemd {
					if _, stderr, err := h.Exec(ctx, "systemctl enable -q --now ssh"); err != nil {
						return fmt.Errorf("%s: starting ssh.service: %v: %s", h.Name(), err, stderr)
					}
					return nil
				}
				p, err := h.Start(ctx, []string{"/usr/sbin/sshd", "-D", "-e"}, filepath.Join(logDir, "sshd-"+h.Name()+".log"))
				if err != nil {
					return err
				}
				b.Cleanup(func() { _ = p.Kill() })
				return nil
			}()
			if err != nil {
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

// startLabSouls copies the soul binary into every host and starts `soul
// run` there, SID = host name; the first small hosts join with covens lab
// and lab-small, the others with lab.
func (e *env) startLabSouls(l *lab.Lab, small int, logDir string) {
	ctx := context.Background()
	bin := soulBinary(e.tb)
	tokAll, tokSmall := e.joinToken("lab"), e.joinToken("lab", "lab-small")
	for i, h := range l.Hosts() {
		if err := h.CopyIn(bin, "/usr/local/bin/soul"); err != nil {
			e.tb.Fatal(err)
		}
		tok := tokAll
		if i < small {
			tok = tokSmall
		}
		p, err := h.Start(ctx, []string{"/usr/local/bin/soul", "run", "--keeper", "https://" + e.addr, "--sid", h.Name(),
			"--data-dir", "/var/lib/soul", "--join-token", tok, "--log-level", "warn"}, filepath.Join(logDir, "soul-"+h.Name()+".log"))
		if err != nil {
			e.tb.Fatal(err)
		}
		e.tb.Cleanup(func() { _ = p.Kill() })
	}
	names := map[string]bool{}
	for _, h := range l.Hosts() {
		names[h.Name()] = true
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := 0
		for _, sid := range e.k.Gateway().ConnectedSIDs() {
			if names[sid] {
				got++
			}
		}
		if got == len(l.Hosts()) {
			return
		}
		if time.Now().After(deadline) {
			e.tb.Fatalf("%d of %d lab souls connected", got, len(l.Hosts()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ansible drives the machine's Ansible against the lab hosts.
type ansible struct {
	dir   string
	hosts []string // host names, lab order
}

// sshKeyPair makes an ed25519 key pair in dir for Ansible's SSH logins to
// the lab hosts: the private key's path and the public key's line.
func sshKeyPair(b *testing.B, dir string) (string, []byte) {
	b.Helper()
	key := filepath.Join(dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		b.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		b.Fatal(err)
	}
	return key, pub
}

// newAnsible writes the inventory, the playbooks and the template, or
// returns nil when ansible-playbook is not installed.
func newAnsible(b *testing.B, l *lab.Lab, dir, key string) *ansible {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		b.Logf("ansible-playbook not found (apt-get install ansible): measuring Soul Stack only")
		return nil
	}
	a := &ansible{dir: filepath.Join(dir, "ansible")}
	var inv strings.Builder
	inv.WriteString("[lab]\n")
	for _, h := range l.Hosts() {
		a.hosts = append(a.hosts, h.Name())
		fmt.Fprintf(&inv, "%s ansible_host=%s\n", h.Name(), h.IP())
	}
	fmt.Fprintf(&inv, "\n[lab:vars]\nansible_user=root\nansible_ssh_private_key_file=%s\n", key)
	files := map[string]string{
		"inventory": inv.String(), "create.yml": ansibleCreate, "rollout.yml": ansibleRollout, "site.conf.j2": ansibleTemplate,
		"ansible.cfg": "[defaults]\nhost_key_checking = False\nretry_files_enabled = False\n",
	}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(a.dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return a
}

var changedRE = regexp.MustCompile(`changed=(\d+)`)

// ansibleOp is one Ansible operation's wall time and controller use.
type ansibleOp struct {
	wall time.Duration
	use  ctlUse
}

// run runs an Ansible program in the ansible directory and returns its
// wall time and controller use and the sum of changed= of its recap.
func (a *ansible) run(b *testing.B, tuned bool, size int, prog string, args ...string) (ansibleOp, int) {
	cmd := exec.Command(prog, args...)
	cmd.Dir = a.dir
	cmd.Env = append(os.Environ(), "ANSIBLE_CONFIG="+filepath.Join(a.dir, "ansible.cfg"), "ANSIBLE_NOCOLOR=1")
	if tuned {
		cmd.Env = append(cmd.Env, "ANSIBLE_FORKS="+strconv.Itoa(size), "ANSIBLE_GATHERING=explicit", "ANSIBLE_PIPELINING=True",
			"ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3")
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", prog, args, err, tail(string(out), 3000))
	}
	changed := 0
	for _, m := range changedRE.FindAllStringSubmatch(string(out), -1) {
		c, _ := strconv.Atoi(m[1])
		changed += c
	}
	return ansibleOp{wall: d, use: childUse(cmd)}, changed
}

// childUse is a finished command's CPU time and peak RSS from wait4's
// rusage (it and the descendants it waited for).
func childUse(cmd *exec.Cmd) ctlUse {
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return ctlUse{}
	}
	return ctlUse{CPU: time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)), Peak: ru.Maxrss << 10}
}

// round runs the four operations once with Ansible on the first size
// hosts, checking the changes each reports.
func (a *ansible) round(b *testing.B, size, round int, tuned bool) map[string]ansibleOp {
	target := strings.Join(a.hosts[:size], ":")
	mode := "defaults"
	if tuned {
		mode = "tuned"
	}
	siteDir := fmt.Sprintf("/srv/ansible-%s-%d-%d", mode, size, round)
	vars := func(release string) []string {
		return []string{"-i", "inventory", "-e", "target=" + target, "-e", "site_dir=" + siteDir, "-e", "release=" + release}
	}
	out := map[string]ansibleOp{}
	var changed int
	out["command"], _ = a.run(b, tuned, size, "ansible", target, "-i", "inventory", "-m", "command", "-a", "uptime")
	if out["create"], changed = a.run(b, tuned, size, "ansible-playbook", append(vars("1.0"), "create.yml")...); changed != 3*size {
		b.Fatalf("ansible create (%s) changed %d, want %d", mode, changed, 3*size)
	}
	if out["noop"], changed = a.run(b, tuned, size, "ansible-playbook", append(vars("1.0"), "create.yml")...); changed != 0 {
		b.Fatalf("ansible no-op re-run (%s) changed %d, want 0", mode, changed)
	}
	out["rollout"], _ = a.run(b, tuned, size, "ansible-playbook", append(vars(fmt.Sprintf("2.%d", round)), "rollout.yml")...)
	b.Logf("ansible %s round %d on %d hosts: command %s, create %s, noop %s, rollout %s", mode, round, size,
		out["command"], out["create"], out["noop"], out["rollout"])
	return out
}

func (o ansibleOp) String() string {
	return fmt.Sprintf("%s (CPU %.2f s, peak %.0f MiB)", o.wall.Round(time.Millisecond), o.use.CPU.Seconds(), mib(o.use.Peak))
}
