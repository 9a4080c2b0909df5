package ansible

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/lab"
)

// aptInstall installs pkgs in h from the lab's offline repository. The
// package lists are fetched only when the host has none yet. Otherwise the
// lists' time stamps are put back after the install, so that Ansible's apt
// cache_valid_time (installed after Soul Stack's runs) sees the cache as
// Soul Stack left it, not as this test touched it. dpkg skips its fsyncs
// (--force-unsafe-io): these are the test's installs, not the role's, on
// hosts that live for one run. With noByteCompile (for Ansible itself)
// py3compile is diverted away during the install, so the packages'
// maintainer scripts skip byte-compiling the thousands of modules of
// ansible-core, which Python compiles on first use anyway.
func aptInstall(t *testing.T, h *lab.Host, pkgs []string, noByteCompile bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	install := "apt-get install -y -q -o Dpkg::Options::=--force-unsafe-io " + strings.Join(pkgs, " ") + " >/dev/null"
	script := `set -e
lists=/var/lib/apt/lists stamp=/var/lib/apt/periodic/update-success-stamp
if ! ls $lists/*_Packages >/dev/null 2>&1; then
  apt-get update -q >/dev/null
  ` + install + `
  exit 0
fi
old=$(stat -c %Y $lists); oldstamp=$(stat -c %Y $stamp 2>/dev/null || true)
` + install + `
touch -d @$old $lists
if [ -n "$oldstamp" ]; then touch -d @$oldstamp $stamp; fi
`
	if noByteCompile {
		const divert = "dpkg-divert --local --rename --quiet --divert /usr/bin/py3compile.test-off "
		script = divert + "--add /usr/bin/py3compile\n(\n" + script + ")\nrc=$?\n" + divert + "--remove /usr/bin/py3compile\nexit $rc\n"
	}
	if _, stderr, err := h.Exec(ctx, script); err != nil {
		t.Fatalf("installing %s: %v\n%s", strings.Join(pkgs, " "), err, stderr)
	}
	t.Logf("installed %s in %v", strings.Join(pkgs, " "), since(start))
}

// recap is Ansible's PLAY RECAP line for the host, and the tasks that
// reported changed.
type recap struct {
	ok, changed, unreachable, failed, skipped int
	changedTasks                              []string
}

var (
	recapRE = regexp.MustCompile(`(?m)^localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)`)
	taskRE  = regexp.MustCompile(`^(?:TASK|RUNNING HANDLER) \[(.*)\]`)
)

// parseRecap reads ansible-playbook's default output.
func parseRecap(out string) (recap, bool) {
	m := recapRE.FindStringSubmatch(out)
	if m == nil {
		return recap{}, false
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	rc := recap{ok: n(1), changed: n(2), unreachable: n(3), failed: n(4), skipped: n(5)}
	task := ""
	for _, line := range strings.Split(out, "\n") {
		if tm := taskRE.FindStringSubmatch(line); tm != nil {
			task = tm[1]
			continue
		}
		if strings.HasPrefix(line, "changed: [localhost]") && !slices.Contains(rc.changedTasks, task) {
			rc.changedTasks = append(rc.changedTasks, task)
		}
	}
	return rc, true
}

// playbook applies the role to the host itself with its defaults: the
// variables the import put in the essence.
const playbook = `- hosts: localhost
  roles:
    - %s
`

// ansibleEnv runs ansible-playbook quietly and deterministically: no
// colours, no retry files, the host's python3.
var ansibleEnv = []string{
	"LC_ALL=C.UTF-8",
	"ANSIBLE_NOCOLOR=1",
	"ANSIBLE_RETRY_FILES_ENABLED=0",
	"ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3",
	"ANSIBLE_LOCALHOST_WARNING=0",
	"ANSIBLE_DEPRECATION_WARNINGS=0",
	"ANSIBLE_ROLES_PATH=/root/ansible/roles",
}

// ansibleCheck copies the upstream role unchanged into h and runs
// `ansible-playbook -c local -i localhost, --check --diff` of a play
// applying it with its defaults. It returns the PLAY RECAP; the whole
// output goes to logDir/ansible-<role>.log (…-control.log for a control
// run, which expects changes) and, when Ansible failed anything or would
// change something unexpectedly, into the test log.
func ansibleCheck(t *testing.T, h *lab.Host, logDir, src, role string, control bool) recap {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := h.CopyIn(src, "/root/ansible/roles/"+role); err != nil {
		t.Fatal(err)
	}
	if err := h.WriteFile("/root/ansible/site.yml", []byte(fmt.Sprintf(playbook, role)), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"env"}, ansibleEnv...)
	argv = append(argv, "ansible-playbook", "-c", "local", "-i", "localhost,", "--check", "--diff", "/root/ansible/site.yml")
	cmd, err := h.Command(ctx, argv...)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	name := "ansible-" + role
	if control {
		name += "-control"
	}
	logPath := filepath.Join(logDir, name+".log")
	_ = os.WriteFile(logPath, outb, 0o644)
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	rc, ok := parseRecap(out)
	if !ok {
		t.Fatalf("ansible-playbook printed no PLAY RECAP for localhost (%v):\n%s", err, out)
	}
	t.Logf("ansible-playbook --check --diff in %v: ok=%d changed=%d unreachable=%d failed=%d skipped=%d", since(start),
		rc.ok, rc.changed, rc.unreachable, rc.failed, rc.skipped)
	if rc.failed+rc.unreachable > 0 || (rc.changed > 0 && !control) {
		t.Logf("ansible-playbook --check --diff output:\n%s", out)
	}
	return rc
}
