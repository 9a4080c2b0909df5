package lab

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// sourcesFunc returns the Debian archive and apt sources to build from.
type sourcesFunc func() (archive aptSource, srcs []aptSource, err error)

// ensureRepo returns the cached local apt repository holding pkgs and the
// dependencies the base lacks, building it first if needed. The caller
// holds the cache lock.
func ensureRepo(ctx context.Context, cache, base string, sources sourcesFunc, pkgs []string) (dir string, built bool, err error) {
	pkgs = slices.Compact(slices.Sorted(slices.Values(pkgs)))
	// A rebuilt base may hold other versions, so the repository follows
	// the base's package database, not just its name.
	status, err := os.ReadFile(filepath.Join(base, "var/lib/dpkg/status"))
	if err != nil {
		return "", false, fmt.Errorf("reading the base's package database: %w", err)
	}
	sum := sha256.Sum256([]byte(string(status) + "\n" + strings.Join(pkgs, "\n")))
	dir = filepath.Join(cache, "repo-"+hex.EncodeToString(sum[:6]))
	marker := dir + ".complete"
	if _, err := os.Stat(marker); err == nil {
		return dir, false, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", false, fmt.Errorf("removing half-built repository: %w", err)
	}
	tmp, err := os.MkdirTemp(cache, filepath.Base(dir)+".tmp-")
	if err != nil {
		return "", false, fmt.Errorf("building repository: %w", err)
	}
	fail := func(err error) (string, bool, error) {
		return "", false, errors.Join(fmt.Errorf("building repository of %s: %w", strings.Join(pkgs, " "), err), os.RemoveAll(tmp))
	}
	if len(pkgs) > 0 {
		_, srcs, err := sources()
		if err != nil {
			return fail(err)
		}
		debs, err := downloadPackages(ctx, cache, base, srcs, pkgs)
		if err != nil {
			return fail(err)
		}
		for _, src := range debs {
			if err := linkOrCopy(src, filepath.Join(tmp, filepath.Base(src))); err != nil {
				return fail(err)
			}
		}
	}
	if err := writeIndex(ctx, tmp); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "requested"), []byte(strings.Join(pkgs, "\n")+"\n"), 0o644); err != nil {
		return fail(err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return "", false, fmt.Errorf("building repository: %w", err)
	}
	return dir, true, nil
}

// instRE matches a line of apt-get's simulation: "Inst name [old] (version
// release… [arch])".
var instRE = regexp.MustCompile(`^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) .*\[([^\]]+)\]\)`)

// downloadPackages resolves pkgs against the base's dpkg status with a
// private apt configuration (the machine's own apt state is not touched),
// downloads what is missing into the cache and returns the paths of the
// .debs an install into the base needs.
func downloadPackages(ctx context.Context, cache, base string, srcs []aptSource, pkgs []string) ([]string, error) {
	aptDir := filepath.Join(cache, "apt")
	debs := filepath.Join(cache, "debs")
	if err := os.MkdirAll(aptDir, 0o755); err != nil {
		return nil, err
	}
	status := filepath.Join(aptDir, "status")
	if err := copyFile(filepath.Join(base, "var/lib/dpkg/status"), status); err != nil {
		return nil, err
	}
	conf, err := aptConfig(aptDir, status, debs, srcs)
	if err != nil {
		return nil, err
	}
	env := []string{"APT_CONFIG=" + conf, "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"}
	if _, err := run(ctx, env, "apt-get", "-q", "update"); err != nil {
		return nil, err
	}
	sim, err := run(ctx, env, "apt-get", append([]string{"-s", "install"}, pkgs...)...)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, line := range strings.Split(sim, "\n") {
		if m := instRE.FindStringSubmatch(line); m != nil {
			files = append(files, filepath.Join(debs, archiveName(m[1], m[2], m[3])))
		}
	}
	if _, err := run(ctx, env, "apt-get", append([]string{"-q", "-y", "--download-only", "install"}, pkgs...)...); err != nil {
		return nil, err
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("apt-get downloaded no %s: %w", filepath.Base(f), err)
		}
	}
	return files, nil
}

// archiveName is the file name apt gives a downloaded package.
func archiveName(name, version, arch string) string {
	q := strings.NewReplacer(":", "%3a", "_", "%5f")
	return q.Replace(name) + "_" + q.Replace(version) + "_" + q.Replace(arch) + ".deb"
}

// writeIndex writes the Packages and Release files of a flat repository
// holding the .debs in dir.
func writeIndex(ctx context.Context, dir string) error {
	debs, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil {
		return err
	}
	slices.Sort(debs)
	var pkgs strings.Builder
	for _, deb := range debs {
		ctrl, err := run(ctx, nil, "dpkg-deb", "-f", deb)
		if err != nil {
			return err
		}
		size, md5sum, sha256sum, err := fileSums(deb)
		if err != nil {
			return err
		}
		fmt.Fprintf(&pkgs, "%s\nFilename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n\n",
			strings.TrimRight(ctrl, "\n"), filepath.Base(deb), size, md5sum, sha256sum)
	}
	index := filepath.Join(dir, "Packages")
	if err := os.WriteFile(index, []byte(pkgs.String()), 0o644); err != nil {
		return err
	}
	size, md5sum, sha256sum, err := fileSums(index)
	if err != nil {
		return err
	}
	release := fmt.Sprintf("Origin: soulstack-lab\nLabel: soulstack-lab\nDate: %s\nMD5Sum:\n %s %d Packages\nSHA256:\n %s %d Packages\n",
		time.Now().UTC().Format(time.RFC1123), md5sum, size, sha256sum, size)
	return os.WriteFile(filepath.Join(dir, "Release"), []byte(release), 0o644)
}

func fileSums(path string) (size int64, md5sum, sha256sum string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", "", err
	}
	defer f.Close()
	m, s := md5.New(), sha256.New()
	size, err = io.Copy(io.MultiWriter(m, s), f)
	if err != nil {
		return 0, "", "", fmt.Errorf("reading %s: %w", path, err)
	}
	return size, hex.EncodeToString(m.Sum(nil)), hex.EncodeToString(s.Sum(nil)), nil
}

// linkOrCopy hard-links src to dst, copying when they are on different file
// systems; dst is replaced.
func linkOrCopy(src, dst string) error {
	_ = os.Remove(dst)
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}

// copyFile copies src to dst, replacing dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}
