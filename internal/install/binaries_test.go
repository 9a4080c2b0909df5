package install_test

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/install"
)

// The soul built like make dist builds it, for this machine's
// architecture and the other one, has no dynamic dependencies (no program
// interpreter, no needed libraries): it runs whatever the host's libc.
// The check itself refuses a dynamically linked program and a binary of
// another architecture.
func TestSoulBinaryIsStatic(t *testing.T) {
	if err := install.CheckStatic(bins["soul"], 0); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bins["soul"])
	if err != nil {
		t.Fatal(err)
	}
	interp, needed := false, 0
	for _, p := range f.Progs {
		interp = interp || p.Type == elf.PT_INTERP
	}
	libs, _ := f.DynString(elf.DT_NEEDED)
	needed = len(libs)
	f.Close()
	if interp || needed > 0 {
		t.Fatalf("soul: PT_INTERP %v, DT_NEEDED %d", interp, needed)
	}
	if err := install.CheckStatic("/bin/sh", 0); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("/bin/sh passed the static check: %v", err)
	}
	other := elf.EM_AARCH64
	if runtime.GOARCH == "arm64" {
		other = elf.EM_X86_64
	}
	if err := install.CheckStatic(bins["soul"], other); err == nil {
		t.Fatal("a binary of this architecture passed as another's")
	}

	// The other architecture's soul, built as make dist builds it, is
	// static too (the Keeper serves it to install.sh on such hosts).
	goarch := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	cross := filepath.Join(t.TempDir(), "soul-linux-"+goarch)
	start := time.Now()
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", cross, "./cmd/soul")
	build.Dir, build.Env = repoDir, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the linux/%s soul: %v\n%s", goarch, err, out)
	}
	t.Logf("linux/%s soul built in %v", goarch, time.Since(start).Round(time.Millisecond))
	if err := install.CheckStatic(cross, other); err != nil {
		t.Fatalf("linux/%s soul: %v", goarch, err)
	}
}

// The Keeper finds soul-linux-<arch> in its directories, only if static
// and of that architecture, and says where it looked when it has none.
func TestFindSoulBinary(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(bins["soul"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "soul-linux-"+runtime.GOARCH), b, 0o755); err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	// A binary of the wrong architecture under the other's name is skipped.
	if err := os.WriteFile(filepath.Join(dir, "soul-linux-"+other), b, 0o755); err != nil {
		t.Fatal(err)
	}
	sb := &install.SoulBinaries{Dirs: []string{filepath.Join(dir, "nothing"), dir}}
	got, err := sb.Find("linux", runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != filepath.Join(dir, "soul-linux-"+runtime.GOARCH) || got.Size != int64(len(b)) || len(got.SHA256) != 64 {
		t.Fatalf("found %+v", got)
	}
	_, err = sb.Find("linux", other)
	if !errors.Is(err, install.ErrNoBinary) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "skipped") {
		t.Fatalf("other arch: %v", err)
	}
	if _, err := sb.Find("windows", "amd64"); !errors.Is(err, install.ErrNoBinary) {
		t.Fatalf("windows: %v", err)
	}
}
