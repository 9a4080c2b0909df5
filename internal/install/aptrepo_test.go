package install_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/soulstack/soulstack/internal/install"
)

// testKey makes an OpenPGP key for the test and returns its armored secret
// and public keys.
func testKey(t *testing.T, name string) (secret, public []byte) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "test only", "test@example.org", &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048})
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, ser func(w *bytes.Buffer) error) []byte {
		var b bytes.Buffer
		w, err := armor.Encode(&b, typ, nil)
		if err != nil {
			t.Fatal(err)
		}
		var raw bytes.Buffer
		if err := ser(&raw); err != nil {
			t.Fatal(err)
		}
		w.Write(raw.Bytes())
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return append(b.Bytes(), '\n')
	}
	secret = enc(openpgp.PrivateKeyType, func(w *bytes.Buffer) error { return e.SerializePrivate(w, nil) })
	public = enc(openpgp.PublicKeyType, func(w *bytes.Buffer) error { return e.Serialize(w) })
	return secret, public
}

// aptGet runs apt-get as an unprivileged-path client of its own: sources,
// lists, cache and dpkg status under root, nothing of this machine's apt
// state read or written; it returns the output and whether apt succeeded.
func aptGet(t *testing.T, root, dir string, args ...string) (string, bool) {
	t.Helper()
	for _, d := range []string{"etc/apt/sources.list.d", "etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/trusted.gpg.d",
		"var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/lib/dpkg"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status := filepath.Join(root, "var/lib/dpkg/status")
	if _, err := os.Stat(status); err != nil {
		if err := os.WriteFile(status, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := []string{
		"-o", "Dir::Etc=" + filepath.Join(root, "etc/apt"),
		"-o", "Dir::State=" + filepath.Join(root, "var/lib/apt"),
		"-o", "Dir::State::status=" + status,
		"-o", "Dir::Cache=" + filepath.Join(root, "var/cache/apt"),
		"-o", "Debug::NoLocking=1",
		"-o", "APT::Sandbox::User=root",
		"-o", "Acquire::Languages=none",
		"-o", "APT::Architecture=" + runtime.GOARCH,
		"-q",
	}
	cmd := exec.Command("apt-get", append(opts, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"}
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// checkAptRepo: `make repo` over the packages `make package` left in dist
// writes a signed apt repository that apt, pointed at it over HTTP with the
// repository's key (signed-by=), updates from without a warning, resolves
// `apt-get install soulstack-soul` in and downloads the very package from;
// with another key, apt refuses the repository.
func checkAptRepo(t *testing.T, dist string) {
	t.Helper()
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Fatal("apt-get is needed")
	}
	secret, _ := testKey(t, "Soul Stack test archive")
	keyFile := filepath.Join(t.TempDir(), "key.asc")
	if err := os.WriteFile(keyFile, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, repoDir, "make", "repo", "DIST="+dist, "REPO_KEY="+keyFile)
	repo := filepath.Join(dist, "apt")
	for _, p := range []string{"dists/stable/Release", "dists/stable/InRelease", "dists/stable/Release.gpg",
		"dists/stable/main/binary-" + runtime.GOARCH + "/Packages", "dists/stable/main/binary-" + runtime.GOARCH + "/Packages.gz", install.KeyFileName} {
		if _, err := os.Stat(filepath.Join(repo, p)); err != nil {
			t.Errorf("make repo: %v", err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(repo)))
	defer srv.Close()

	root, work := t.TempDir(), t.TempDir()
	source := "deb [signed-by=" + filepath.Join(repo, install.KeyFileName) + "] " + srv.URL + "/ stable main\n"
	if err := os.MkdirAll(filepath.Join(root, "etc/apt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	out, ok := aptGet(t, root, work, "update")
	if !ok || strings.Contains(out, "W:") || strings.Contains(out, "E:") {
		t.Fatalf("apt-get update from the repository (ok %v):\n%s", ok, out)
	}
	out, ok = aptGet(t, root, work, "install", "-s", "-y", install.PkgSoul)
	if !ok || !strings.Contains(out, "Inst "+install.PkgSoul+" ") {
		t.Fatalf("apt-get install -s %s (ok %v):\n%s", install.PkgSoul, ok, out)
	}
	out, ok = aptGet(t, root, work, "download", install.PkgSoul)
	if !ok {
		t.Fatalf("apt-get download %s:\n%s", install.PkgSoul, out)
	}
	got, _ := filepath.Glob(filepath.Join(work, install.PkgSoul+"_*.deb"))
	want, _ := filepath.Glob(filepath.Join(dist, install.PkgSoul+"_*_"+runtime.GOARCH+".deb"))
	if len(got) != 1 || len(want) != 1 {
		t.Fatalf("downloaded %v, built %v", got, want)
	}
	if a, b := readFile(t, got[0]), readFile(t, want[0]); a != b {
		t.Error("apt downloaded another file than the package make package built")
	}

	// Another key: apt refuses the repository's signature.
	_, otherPub := testKey(t, "Someone else")
	other := filepath.Join(t.TempDir(), "other.asc")
	if err := os.WriteFile(other, otherPub, 0o644); err != nil {
		t.Fatal(err)
	}
	root2 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root2, "etc/apt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root2, "etc/apt/sources.list"), []byte(strings.Replace(source, filepath.Join(repo, install.KeyFileName), other, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = aptGet(t, root2, work, "update")
	if !strings.Contains(out, "NO_PUBKEY") && !strings.Contains(out, "not signed") {
		t.Errorf("apt-get update with another key did not refuse the repository:\n%s", out)
	}
	if out, ok := aptGet(t, root2, work, "install", "-s", install.PkgSoul); ok {
		t.Errorf("apt resolved %s from a repository it could not verify:\n%s", install.PkgSoul, out)
	}
}
