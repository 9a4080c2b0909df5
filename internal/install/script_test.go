package install_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/install"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/testutil"
)

// liveKeeper is a real Keeper serving soul binaries from soulDir.
type liveKeeper struct {
	addr, url   string
	token       string
	fingerprint string
	client      *apiclient.Client
	pin         string
}

func startKeeper(t *testing.T, soulDir string) *liveKeeper {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	cfg.ShutdownTimeout = config.Duration(2 * time.Second)
	cfg.SoulDir = soulDir
	ini, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg, ArchonName: "root"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := keeper.New(ctx, keeper.Config{Keeper: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("keeper stopped: %v", err)
		}
		k.Close()
	})
	lk := &liveKeeper{addr: ln.Addr().String(), url: "https://" + ln.Addr().String(), token: ini.Token.Token, fingerprint: ini.Fingerprint}
	c, err := apiclient.New(lk.url, lk.token, apiclient.WithFingerprint(ini.Fingerprint))
	if err != nil {
		t.Fatal(err)
	}
	lk.client = c
	testutil.WaitFor(t, 10*time.Second, func() bool { return c.Ready(ctx) == nil }, "keeper ready")
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lk.pin = v.TLSPin
	return lk
}

// fetchScript downloads install.sh as a user would, with curl pinned to
// the Keeper's public key.
func (k *liveKeeper) fetchScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "install.sh")
	run(t, "", "curl", "-fsS", "-k", "--pinnedpubkey", k.pin, "-o", p, k.url+"/install.sh")
	return p
}

// install.sh fetched from a real Keeper installs the soul binary it serves
// (SHA-256 checked), the unit and soul.env into a root; the installed soul
// started as the unit would start it joins with the token and shows up
// connected with its version. Faults leave the root as it was: a wrong pin,
// an architecture the Keeper has no binary for, a soul already installed.
func TestInstallScript(t *testing.T) {
	for _, tool := range []string{"curl", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (scripts/test-deps.sh installs it)", tool)
		}
	}
	soulDir := t.TempDir()
	b, err := os.ReadFile(bins["soul"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(soulDir, "soul-linux-"+runtime.GOARCH), b, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	k := startKeeper(t, soulDir)
	ctx := context.Background()

	// The binary endpoint: the bytes and their SHA-256; 404 with the reason
	// for an architecture without a binary.
	resp, err := (&http.Client{Transport: insecure()}).Get(k.url + "/v1/soul/binary?os=linux&arch=" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(install.HeaderSHA256) != hex.EncodeToString(sum[:]) || resp.ContentLength != int64(len(b)) {
		t.Fatalf("soul binary: %d, sha %q, length %d", resp.StatusCode, resp.Header.Get(install.HeaderSHA256), resp.ContentLength)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	resp, err = (&http.Client{Transport: insecure()}).Get(k.url + "/v1/soul/binary?os=linux&arch=" + other)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("soul binary for %s: %d, want 404", other, resp.StatusCode)
	}

	script := k.fetchScript(t)
	if _, err := exec.LookPath("shellcheck"); err == nil {
		run(t, "", "shellcheck", "-s", "sh", script)
	}
	// One use: the soul started at the end uses it up.
	jt, err := k.client.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"web"}, TTL: apitypes.Duration(time.Hour), MaxUses: 1})
	if err != nil {
		t.Fatal(err)
	}

	jtFile := filepath.Join(t.TempDir(), "join-token")
	if err := os.WriteFile(jtFile, []byte(jt.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A wrong pin: nothing is installed.
	bad := t.TempDir()
	wrong := strings.Replace(readFile(t, script), k.pin, "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", -1)
	if err := os.WriteFile(script+".wrong", []byte(wrong), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := shScript(script+".wrong", "--root", bad, "--init", "systemd", "--join-token-file", jtFile); err == nil || !strings.Contains(out, "nothing installed") {
		t.Fatalf("wrong pin: %v\n%s", err, out)
	}
	assertEmptyTree(t, bad)

	// A revoked token and a token of another keeper are refused before the
	// host is touched, each with its reason.
	revoked, err := k.client.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"web"}, TTL: apitypes.Duration(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.client.RevokeJoinToken(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	expired, err := k.client.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"web"}, TTL: apitypes.Duration(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(expired.ExpiresAt) + 100*time.Millisecond)
	foreign := jt.Token[:strings.LastIndex(jt.Token, ".")+1] + strings.Repeat("ab", 32)
	for tok, why := range map[string]string{revoked.Token: "join token revoked at", expired.Token: "join token expired at",
		foreign: "for another keeper", "SSJ1.x y": "malformed"} {
		if out, err := shScript(script, "--root", bad, "--init", "systemd", "--join-token", tok); err == nil || !strings.Contains(out, why) || !strings.Contains(out, "nothing installed") {
			t.Fatalf("token %q: %v\n%s", tok, err, out)
		}
	}
	assertEmptyTree(t, bad)

	// A host without curl, and a host of an architecture the Keeper has no
	// soul binary for: one line each, nothing installed.
	noCurl := toolDir(t, map[string]string{"uname": "", "id": ""})
	if out, err := shScriptPath(noCurl, script, "--root", bad, "--init", "systemd", "--join-token-file", jtFile); err == nil || strings.TrimSpace(out) != "install.sh: curl is needed to download the soul" {
		t.Fatalf("without curl: %v\n%s", err, out)
	}
	otherMachine := map[string]string{"amd64": "aarch64", "arm64": "x86_64"}[runtime.GOARCH]
	foreignArch := toolDir(t, map[string]string{"id": "", "curl": "", "sha256sum": "",
		"uname": "#!/bin/sh\ncase $1 in -m) echo " + otherMachine + " ;; *) echo Linux ;; esac\n"})
	if out, err := shScriptPath(foreignArch, script, "--root", bad, "--init", "systemd", "--join-token-file", jtFile); err == nil ||
		!strings.Contains(out, "has no soul binary for linux/"+other) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("no binary for %s: %v\n%s", other, err, out)
	}
	assertEmptyTree(t, bad)

	// The real installation into a root, the token in sh's environment as
	// the README says. A curl that records its command line proves the
	// token is on none (audit N2: a local user polling the process list
	// caught it in the join check's curl).
	root := t.TempDir()
	argvLog := filepath.Join(t.TempDir(), "curl-argv")
	realCurl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	wrap := toolDir(t, map[string]string{"curl": "#!/bin/sh\nprintf '%s\\n' \"$*\" >>" + argvLog + "\nexec " + realCurl + " \"$@\"\n"})
	cmd := exec.Command("sh", script, "--root", root, "--init", "systemd")
	cmd.Env = append(os.Environ(), "PATH="+wrap+":"+os.Getenv("PATH"), "SOUL_JOIN_TOKEN="+jt.Token)
	b2, err := cmd.CombinedOutput()
	out := string(b2)
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	argv := readFile(t, argvLog)
	if !strings.Contains(argv, "/v1/soul/join-check") {
		t.Fatalf("the join check did not run curl:\n%s", argv)
	}
	if strings.Contains(argv, jt.Token) {
		t.Fatalf("the join token was on curl's command line (%d curl runs)", strings.Count(argv, "\n"))
	}
	got, err := os.ReadFile(filepath.Join(root, "usr/local/bin/soul"))
	if err != nil || sha256.Sum256(got) != sum {
		t.Fatalf("installed soul differs from the served one (%v)", err)
	}
	env := readFile(t, filepath.Join(root, "etc/soulstack/soul.env"))
	if !strings.Contains(env, "SOULSTACK_KEEPER="+k.url+"\n") || !strings.Contains(env, "SOUL_JOIN_TOKEN="+jt.Token+"\n") {
		t.Fatalf("soul.env:\n%s", env)
	}
	if fi, _ := os.Stat(filepath.Join(root, "etc/soulstack/soul.env")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("soul.env mode %v", fi.Mode().Perm())
	}
	unit := readFile(t, filepath.Join(root, "etc/systemd/system/soulstack-soul.service"))
	if !strings.Contains(unit, "ExecStart=/usr/local/bin/soul run --keeper ${SOULSTACK_KEEPER}") || !strings.Contains(unit, "KillMode=process") {
		t.Fatalf("unit:\n%s", unit)
	}

	// A fleet (issue 30): --keeper repeated writes the list the soul fails
	// over along (the first serves the install); a --keeper that is not a
	// plain https URL is refused before anything is touched (it would be
	// written into soul.env).
	jt2, err := k.client.CreateJoinToken(ctx, apitypes.CreateJoinTokenRequest{Covens: []string{"web"}, TTL: apitypes.Duration(time.Hour), MaxUses: 1})
	if err != nil {
		t.Fatal(err)
	}
	fleet := t.TempDir()
	const k2, k3 = "https://k2.example:8080", "https://[fd00::3]:8080"
	cmd = exec.Command("sh", script, "--root", fleet, "--init", "systemd", "--keeper", k.url, "--keeper", k2, "--keeper="+k3)
	cmd.Env = append(os.Environ(), "SOUL_JOIN_TOKEN="+jt2.Token)
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "connect to "+k.url+","+k2+","+k3) {
		t.Fatalf("install.sh with three keepers: %v\n%s", err, b)
	}
	if env := readFile(t, filepath.Join(fleet, "etc/soulstack/soul.env")); !strings.Contains(env, "SOULSTACK_KEEPER="+k.url+","+k2+","+k3+"\n") {
		t.Fatalf("soul.env of a fleet install:\n%s", env)
	}
	for _, bad := range []string{"http://k2.example:8080", "https://k2.example:8080\nSOUL_JOIN_TOKEN=x", "https://a;b"} {
		empty := t.TempDir()
		if out, err := shScript(script, "--root", empty, "--init", "systemd", "--keeper", k.url, "--keeper", bad); err == nil || !strings.Contains(out, "install.sh: ") {
			t.Errorf("--keeper %q: %v\n%s", bad, err, out)
		}
		if left, _ := os.ReadDir(empty); len(left) > 0 {
			t.Errorf("--keeper %q left %d entries under the root", bad, len(left))
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, "*", "*", "*", ".soulstack-install.*"))
	if len(leftovers) > 0 {
		t.Fatalf("staging files left: %v", leftovers)
	}

	// Installed again: refused without --reinstall, the install untouched.
	if out, err := shScript(script, "--root", root, "--init", "systemd", "--join-token-file", jtFile); err == nil || !strings.Contains(out, "--reinstall") {
		t.Fatalf("second install: %v\n%s", err, out)
	}
	// SysV flavour: an init script instead of the unit.
	sysv := t.TempDir()
	if out, err := shScript(script, "--root", sysv, "--init", "sysv", "--join-token-file", jtFile); err != nil {
		t.Fatalf("sysv: %v\n%s", err, out)
	}
	if s := readFile(t, filepath.Join(sysv, "etc/init.d/soulstack-soul")); !strings.Contains(s, "Provides:          soulstack-soul") {
		t.Fatalf("init script:\n%s", s)
	}
	// --uninstall removes all of it (here under a root: nothing to stop).
	if out, err := shScript(script, "--root", sysv, "--uninstall"); err != nil || !strings.Contains(out, "uninstalled") {
		t.Fatalf("--uninstall: %v\n%s", err, out)
	}
	for _, d := range []string{"etc/soulstack", "var/lib/soulstack"} {
		if _, err := os.Stat(filepath.Join(sysv, d)); err == nil {
			t.Errorf("after --uninstall: %s is left", d)
		}
	}
	assertEmptyTree(t, sysv)

	// --help piped into sh (no $0 to read the script from) prints the help.
	if out, err := exec.Command("sh", "-c", "sh -s -- --help <"+script).CombinedOutput(); err != nil || !strings.Contains(string(out), "--uninstall") || !strings.Contains(string(out), "SOUL_JOIN_TOKEN='<token>' sh") {
		t.Errorf("install.sh --help through a pipe: %v\n%s", err, out)
	}

	// Without a join token: the keeper's fingerprint, from the script,
	// is pinned, so the soul waits as pending instead of exiting ("no way
	// to trust the keeper").
	pend := t.TempDir()
	if out, err := shScript(script, "--root", pend, "--init", "systemd"); err != nil || !strings.Contains(out, "pending") {
		t.Fatalf("install.sh without a token: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(pend, "var/lib/soulstack/soul/keeper.fingerprint"))); got != k.fingerprint {
		t.Fatalf("pinned fingerprint %q, want the keeper's %q", got, k.fingerprint)
	}
	testutil.StartProcess(t, "pending soul", filepath.Join(pend, "usr/local/bin/soul"),
		"run", "--keeper", k.url, "--sid", "pending-host", "--data-dir", filepath.Join(pend, "var/lib/soulstack/soul"), "--root", filepath.Join(pend, "files"))
	testutil.WaitFor(t, 20*time.Second, func() bool {
		s, err := k.client.GetSoul(ctx, "pending-host")
		return err == nil && s.Status == store.SoulPending
	}, "the soul installed without a token pending")

	// Start the installed soul as its unit does (environment file, same
	// arguments, data dir under the root): it joins with the token.
	for _, line := range strings.Split(env, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			t.Setenv(k, v)
		}
	}
	soulCmd := testutil.StartProcess(t, "installed soul", filepath.Join(root, "usr/local/bin/soul"),
		"run", "--keeper", k.url, "--sid", "fresh-host", "--data-dir", filepath.Join(root, "var/lib/soulstack/soul"), "--root", filepath.Join(root, "files"))
	_ = soulCmd
	testutil.WaitFor(t, 20*time.Second, func() bool {
		s, err := k.client.GetSoul(ctx, "fresh-host")
		return err == nil && s.Status == store.SoulConnected
	}, "the installed soul connected")
	s, _ := k.client.GetSoul(ctx, "fresh-host")
	if want := run(t, "", bins["soul"], "--version"); !strings.Contains(want, s.Version) || s.Version == "" {
		t.Fatalf("keeper shows version %q, the soul says %q", s.Version, want)
	}
	// soulctl souls list shows it in the VERSION column.
	var list, errb bytes.Buffer
	g := &cli.Globals{Getenv: func(string) string { return "" }}
	if code := g.Run(ctx, []string{"--keeper", k.url, "--token", k.token, "--fingerprint", k.fingerprint, "souls", "list"}, &list, &errb); code != 0 {
		t.Fatalf("soulctl souls list: exit %d: %s", code, errb.String())
	}
	if lines := strings.Split(list.String(), "\n"); len(lines) < 2 || !strings.Contains(lines[0], "VERSION") ||
		!strings.HasPrefix(lines[1], "fresh-host ") || !strings.Contains(lines[1], " "+s.Version+" ") {
		t.Fatalf("soulctl souls list, want fresh-host with version %s:\n%s", s.Version, list.String())
	}

	// The token's one use is gone: another host is refused before it is
	// touched.
	if out, err := shScript(script, "--root", bad, "--init", "systemd", "--join-token-file", jtFile); err == nil ||
		!strings.Contains(out, "join token used up (1 of 1 uses)") || !strings.Contains(out, "nothing installed") {
		t.Fatalf("used-up token: %v\n%s", err, out)
	}
	assertEmptyTree(t, bad)
}

// toolDir makes a directory for $PATH holding only tools: a name mapped
// to "" links the machine's tool, otherwise the text is a script.
func toolDir(t *testing.T, tools map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, script := range tools {
		p := filepath.Join(dir, name)
		if script != "" {
			if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		real, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, p); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shScriptPath runs an install.sh with sh and $PATH set to path.
func shScriptPath(path, script string, args ...string) (string, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(sh, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+path)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// shScript runs an install.sh with sh and returns its combined output.
func shScript(script string, args ...string) (string, error) {
	out, err := exec.Command("sh", append([]string{script}, args...)...).CombinedOutput()
	return string(out), err
}

func insecure() *http.Transport {
	return &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
}

// assertEmptyTree fails if dir holds any file (directories may remain).
func assertEmptyTree(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}
