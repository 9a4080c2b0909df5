package install

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// ErrNoBinary is returned (wrapped) when no soul binary for a platform is
// found; the message says where the Keeper looked.
var ErrNoBinary = errors.New("no soul binary")

// Binary is one soul binary the Keeper can serve.
type Binary struct {
	Path    string
	Size    int64
	ModTime time.Time
	SHA256  string // lower-case hex
}

// SoulBinaries finds the soul binaries the Keeper serves: soul-linux-<arch>
// in Dirs, in order (and a plain "soul" of the Keeper's own architecture).
// Only static ELF executables of the asked architecture qualify, so a
// dynamically linked development build is never handed to another host.
// Hashes are cached per file size and modification time.
type SoulBinaries struct {
	Dirs []string

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	size int64
	mod  time.Time
	sum  string
}

// DefaultSoulDirs is where a Keeper looks when no soul_dir is configured:
// next to its own executable (make dist, a tarball), then SoulLibDir (the
// keeper package).
func DefaultSoulDirs() []string {
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dirs = append(dirs, filepath.Dir(exe))
		}
	}
	return append(dirs, SoulLibDir)
}

var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// Find returns the soul binary for goos/goarch.
func (b *SoulBinaries) Find(goos, goarch string) (Binary, error) {
	want, ok := elfMachines[goarch]
	if goos != "linux" || !ok {
		return Binary{}, fmt.Errorf("%w for %s/%s: souls are built for linux/amd64 and linux/arm64", ErrNoBinary, goos, goarch)
	}
	names := []string{"soul-linux-" + goarch}
	if goarch == runtime.GOARCH {
		names = append(names, "soul")
	}
	var why []string
	for _, d := range b.Dirs {
		for _, n := range names {
			p := filepath.Join(d, n)
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			if err := CheckStatic(p, want); err != nil {
				why = append(why, err.Error())
				continue
			}
			sum, err := b.sum(p, fi)
			if err != nil {
				return Binary{}, err
			}
			return Binary{Path: p, Size: fi.Size(), ModTime: fi.ModTime(), SHA256: sum}, nil
		}
	}
	skipped := ""
	if len(why) > 0 {
		skipped = fmt.Sprintf(" (skipped: %v)", why)
	}
	return Binary{}, fmt.Errorf("%w for linux/%s in %v: put soul-linux-%s (make dist) there or set the keeper's soul_dir%s", ErrNoBinary, goarch, b.Dirs, goarch, skipped)
}

func (b *SoulBinaries) sum(p string, fi os.FileInfo) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.cache[p]; ok && c.size == fi.Size() && c.mod.Equal(fi.ModTime()) {
		return c.sum, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("reading soul binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", p, err)
	}
	if b.cache == nil {
		b.cache = map[string]cached{}
	}
	s := hex.EncodeToString(h.Sum(nil))
	b.cache[p] = cached{size: fi.Size(), mod: fi.ModTime(), sum: s}
	return s, nil
}

// CheckStatic fails unless path is an ELF executable for machine with no
// dynamic dependencies: no program interpreter (PT_INTERP) and no needed
// libraries (DT_NEEDED). machine 0 accepts any.
func CheckStatic(path string, machine elf.Machine) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary: %w", path, err)
	}
	defer f.Close()
	if machine != 0 && f.Machine != machine {
		return fmt.Errorf("%s is built for %v, not %v", path, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it has a program interpreter): build it with CGO_ENABLED=0", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v: build it with CGO_ENABLED=0", path, libs)
	}
	return nil
}
