package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// debMaxSize and debTimeout bound the download of a deb URL, which is
// held in memory before it is written.
const (
	debMaxSize = 512 << 20
	debTimeout = 10 * time.Minute
)

// debInstalled is Ansible's apt deb=: the .deb (a path on the host or a
// URL) is copied into a private directory first, so what is checked is
// what is installed; its Package and Version fields decide whether
// anything is to be done; apt-get install of the file pulls its
// dependencies from the configured sources. Check mode fetches and reads
// the file and simulates the install, changing nothing.
func debInstalled(ctx context.Context, a *args, env *module.Env) (domain.Result, error) {
	for _, p := range []string{"name", "names", "version", "latest", "only_upgrade", "enablerepo", "exclude"} {
		if a.has(p) {
			return domain.Result{}, paramErr("deb", "installs the package the file holds; it cannot go with %s", p)
		}
	}
	src, pin := a.str("deb"), strings.ToLower(a.str("sha256"))
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if err := checkSHA256(pin); err != nil {
		return domain.Result{}, paramErr("sha256", "%v", err)
	}
	if err := checkDebSource(src); err != nil {
		return domain.Result{}, paramErr("deb", "%v", err)
	}
	isURL := isHTTPURL(src)
	shown := src // what messages say: a URL without its password
	if u, err := url.Parse(src); isURL && err == nil {
		shown = u.Redacted()
	}
	mgr, err := pickManager(env)
	if err != nil {
		return domain.Result{}, err
	}
	if _, ok := mgr.(aptManager); !ok {
		return domain.Result{}, paramErr("deb", "is supported with apt only, not with %s", mgr.name())
	}
	opts, refreshed, err := pkgPrepare(ctx, a, mgr, env)
	if err != nil {
		return domain.Result{}, err
	}
	dir, err := os.MkdirTemp("", "soul-deb-")
	if err != nil {
		return domain.Result{}, fmt.Errorf("param \"deb\": %w", err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "package.deb")
	if err := fetchDeb(ctx, env, src, shown, isURL, file, pin); err != nil {
		return domain.Result{}, err
	}
	name, version, err := debFields(ctx, shown, file)
	if err != nil {
		return domain.Result{}, err
	}
	installed := map[string]any{}
	data := func() map[string]any { return map[string]any{"installed": installed, "cache_refreshed": refreshed} }
	st, err := mgr.query(ctx, name)
	if err != nil {
		return domain.Result{}, err
	}
	if st.installed {
		installed[name] = st.version
	}
	if st.installed && st.version == version {
		return converged(fmt.Sprintf("installed: %s %s (from %s)", name, version, shown), data()), nil
	}
	if st.installed && !opts.apt.allowDowngrade {
		older, err := dpkgOlder(ctx, version, st.version)
		if err != nil {
			return domain.Result{}, err
		}
		if older {
			return domain.Result{}, paramErr("allow_downgrade", "%s %s is installed and %s holds the older %s: set allow_downgrade: true to downgrade", name, st.version, shown, version)
		}
	}
	argv := aptInstallArgv([]pkgSpec{{deb: file}}, opts)
	plan, err := aptSimulate(ctx, argv)
	if err != nil {
		return domain.Result{}, fmt.Errorf("param \"deb\": %s: %w", shown, err)
	}
	diff := plan.diff()
	if diff == "" {
		diff = fmt.Sprintf("+ %s %s\n", name, version)
	}
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: fmt.Sprintf("would install %s %s from %s", name, version, shown), Data: data()}, nil
	}
	if err := aptRun(ctx, argv); err != nil {
		return domain.Result{}, fmt.Errorf("installing %s: %w", shown, err)
	}
	st, err = mgr.query(ctx, name)
	if err != nil {
		return domain.Result{}, err
	}
	installed[name] = st.version
	res := domain.Result{Changed: true, Diff: diff, Msg: fmt.Sprintf("installed %s %s from %s", name, version, shown), Data: data()}
	if !st.installed || st.version != version {
		res.Failed = true
		res.Msg = fmt.Sprintf("apt-get ran but %s is not installed at %s (have %q)", name, version, st.version)
	}
	return res, nil
}

func isHTTPURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// checkDebSource accepts an absolute clean path or an http(s) URL.
func checkDebSource(src string) error {
	if isHTTPURL(src) {
		if u, err := url.Parse(src); err != nil || u.Host == "" {
			return fmt.Errorf("%q is not a valid URL", src)
		}
		return nil
	}
	if !filepath.IsAbs(src) || filepath.Clean(src) != src {
		return fmt.Errorf("%q: want an absolute, clean path on the host or an http(s) URL", src)
	}
	return nil
}

// checkSHA256 accepts "" or 64 hex digits.
func checkSHA256(v string) error {
	if v != "" && (len(v) != 64 || strings.Trim(strings.ToLower(v), "0123456789abcdef") != "") {
		return fmt.Errorf("%q is not 64 hex digits", v)
	}
	return nil
}

// fetchDeb copies the local file or downloads the URL src to file (mode
// 0600 in a private directory) and checks the pinned sha256.
func fetchDeb(ctx context.Context, env *module.Env, src, shown string, isURL bool, file, pin string) error {
	var body io.Reader
	if isURL {
		b, err := download(ctx, env, src, debTimeout, debMaxSize)
		if err != nil {
			return fmt.Errorf("param \"deb\": %s", strings.ReplaceAll(err.Error(), src, shown))
		}
		body = bytes.NewReader(b)
	} else {
		f, err := os.Open(src)
		if err != nil {
			return fmt.Errorf("param \"deb\": %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("param \"deb\": %w", err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("param \"deb\": %s is not a regular file", src)
		}
		body = f
	}
	out, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("param \"deb\": %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), body)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("param \"deb\": copying %s: %w", shown, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); pin != "" && got != pin {
		return fmt.Errorf("param \"sha256\": %s has sha256 %s, not the pinned %s; nothing was installed", shown, got, pin)
	}
	return nil
}

// debFields reads the Package and Version fields of the .deb at file.
func debFields(ctx context.Context, src, file string) (name, version string, err error) {
	argv := []string{"dpkg-deb", "-f", file, "Package", "Version"}
	r, err := runCmd(ctx, nil, argv...)
	if err == nil && r.rc != 0 {
		err = cmdError(argv, r)
	}
	if err != nil {
		return "", "", fmt.Errorf("param \"deb\": %s is not a readable .deb: %w", src, err)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch strings.TrimSpace(k) {
		case "Package":
			name = strings.TrimSpace(v)
		case "Version":
			version = strings.TrimSpace(v)
		}
	}
	if !pkgNameRe.MatchString(name) || !pkgVersionRe.MatchString(version) {
		return "", "", fmt.Errorf("param \"deb\": %s has no valid Package and Version fields (%q, %q)", src, name, version)
	}
	return name, version, nil
}
