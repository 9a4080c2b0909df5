package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// localScheme is the private URL scheme core.git fetches local
// repositories (plain paths and file:// URLs) through: go-git serves them
// in process (see init in git.go), where its own file transport would run
// the git-upload-pack program, which a host without git lacks.
const localScheme = "soulstack-local"

// localLoader opens the repository at an endpoint's path, a working tree
// (with .git) or a bare repository, for the in-process server.
type localLoader struct{}

// Load implements server.Loader.
func (localLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	r, err := git.PlainOpen(ep.Path)
	if err != nil {
		return nil, transport.ErrRepositoryNotFound
	}
	return r.Storer, nil
}

// gitSource is the repo param resolved: the URL as given (kept in the
// checkout's remote config), the URL actually fetched from, and the form
// shown in messages (no password).
type gitSource struct {
	url       string
	fetchURL  string
	shown     string
	local     bool
	ssh       bool
	localPath string               // host path of a local repository
	auth      transport.AuthMethod // ssh credentials, nil otherwise
}

// classifyRepo classifies repo as git does: a URL with a scheme, an
// scp-like user@host:path (ssh), or a local path (returned).
func classifyRepo(repo string) (localPath string, isSSH bool, err error) {
	shown := auth.RedactURL(repo)
	switch {
	case strings.HasPrefix(repo, "file://"):
		u, err := url.Parse(repo)
		if err != nil || u.Path == "" {
			return "", false, fmt.Errorf("%q is not a valid file:// URL", shown)
		}
		return u.Path, false, nil
	case strings.Contains(repo, "://"):
		scheme := strings.ToLower(repo[:strings.Index(repo, "://")])
		switch scheme {
		case "http", "https", "git":
			return "", false, nil
		case "ssh", "git+ssh", "ssh+git":
			return "", true, nil
		}
		return "", false, fmt.Errorf("URL scheme %q is not supported: use https, http, ssh, git, file or a path", scheme)
	case isSCPLike(repo):
		return "", true, nil
	case path.IsAbs(repo):
		return repo, false, nil
	}
	return "", false, fmt.Errorf("%q is neither a URL (https://, ssh://, file://), user@host:path, nor an absolute path", shown)
}

// parseGitSource classifies repo and resolves a local path inside the
// confinement root.
func parseGitSource(env *module.Env, repo string) (gitSource, error) {
	src := gitSource{url: repo, fetchURL: repo, shown: auth.RedactURL(repo)}
	localPath, isSSH, err := classifyRepo(repo)
	if err != nil {
		return src, fmt.Errorf("param \"repo\": %w", err)
	}
	src.ssh = isSSH
	if localPath == "" {
		return src, nil
	}
	host, err := fsOf(env).HostPath(localPath)
	if err != nil {
		return src, fmt.Errorf("repository %s: %w", localPath, err)
	}
	src.localPath = host
	src.local, src.fetchURL = true, localScheme+"://"+(&url.URL{Path: host}).EscapedPath()
	return src, nil
}

var scpLike = regexp.MustCompile(`^(?:[^@/]+@)?[^:/\s]+:`)

// isSCPLike reports user@host:path (a colon before any slash).
func isSCPLike(s string) bool { return scpLike.MatchString(s) }

// remoteRefs lists the remote's references (ls-remote), without changing
// anything on the host.
func remoteRefs(ctx context.Context, src gitSource) ([]*plumbing.Reference, error) {
	r := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{src.fetchURL}})
	refs, err := r.ListContext(ctx, &git.ListOptions{Auth: src.auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return nil, src.wrap("listing the references of", err)
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("repository %s is empty: it has no branch to check out", src.shown)
	}
	return refs, nil
}

// wrap names the repository in a transport error, without its password.
func (s gitSource) wrap(what string, err error) error {
	msg := err.Error()
	for _, u := range []string{s.url, s.fetchURL} {
		if r := auth.RedactURL(u); r != u {
			msg = strings.ReplaceAll(msg, u, r)
		}
	}
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		msg = "repository not found"
	}
	return fmt.Errorf("%s %s: %s", what, s.shown, msg)
}

// gitTarget is what version names in the remote.
type gitTarget struct {
	version string
	branch  string        // the branch to check out (version is a branch, or HEAD)
	tag     string        // the tag version names
	hash    plumbing.Hash // commit, when known from the listing
	short   bool          // version is an abbreviated commit not resolvable remotely
}

var hexRe = regexp.MustCompile(`^[0-9a-fA-F]{4,40}$`)

// pickTarget resolves version against the remote's references: HEAD (the
// remote's default branch), a branch, a tag (peeled to its commit), a
// full ref name, or a commit SHA.
func pickTarget(refs []*plumbing.Reference, version string) (gitTarget, error) {
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	hashOf := func(n plumbing.ReferenceName) (plumbing.Hash, bool) {
		if p, ok := byName[n+"^{}"]; ok {
			return p.Hash(), true
		}
		r, ok := byName[n]
		if !ok {
			return plumbing.ZeroHash, false
		}
		if r.Type() == plumbing.SymbolicReference {
			if t, ok := byName[r.Target()]; ok {
				return t.Hash(), true
			}
			return plumbing.ZeroHash, false
		}
		return r.Hash(), true
	}
	t := gitTarget{version: version}
	if version == "HEAD" {
		head, ok := byName[plumbing.HEAD]
		if !ok {
			return t, errors.New("the remote has no HEAD: name a branch, tag or commit in version")
		}
		if head.Type() == plumbing.SymbolicReference {
			t.branch = head.Target().Short()
		} else {
			t.branch = branchAt(refs, head.Hash())
		}
		t.hash, _ = hashOf(plumbing.HEAD)
		return t, nil
	}
	if h, ok := hashOf(plumbing.NewBranchReferenceName(version)); ok {
		t.branch, t.hash = version, h
		return t, nil
	}
	if h, ok := hashOf(plumbing.NewTagReferenceName(version)); ok {
		t.tag, t.hash = version, h
		return t, nil
	}
	if strings.HasPrefix(version, "refs/") {
		if h, ok := hashOf(plumbing.ReferenceName(version)); ok {
			n := plumbing.ReferenceName(version)
			switch {
			case n.IsBranch():
				t.branch = n.Short()
			case n.IsTag():
				t.tag = n.Short()
			}
			t.hash = h
			return t, nil
		}
	}
	if hexRe.MatchString(version) {
		if len(version) == 40 {
			t.hash = plumbing.NewHash(strings.ToLower(version))
		} else {
			t.short = true
		}
		return t, nil
	}
	return t, fmt.Errorf("version %q is not a branch, tag or commit of the repository", version)
}

// branchAt names a branch at h, preferring main and master, when the
// remote does not say which branch its HEAD is.
func branchAt(refs []*plumbing.Reference, h plumbing.Hash) string {
	var names []string
	for _, r := range refs {
		if r.Name().IsBranch() && r.Hash() == h {
			names = append(names, r.Name().Short())
		}
	}
	sort.Slice(names, func(i, j int) bool {
		rank := func(s string) int {
			switch s {
			case "main":
				return 0
			case "master":
				return 1
			}
			return 2
		}
		if rank(names[i]) != rank(names[j]) {
			return rank(names[i]) < rank(names[j])
		}
		return names[i] < names[j]
	})
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// homeDir is the home directory of the user the soul runs as.
func homeDir() string {
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/root"
}

// sshLogin is the login of the user the soul runs as (the default ssh user).
func sshLogin() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

// readHostFile reads a small file (a key, known_hosts) through safefs,
// following symlinks under its rules; a missing file is (nil, nil).
func readHostFile(env *module.Env, p string) ([]byte, error) {
	t, err := fsOf(env).Open(p, safefs.Options{Follow: true})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if _, ok, err := t.Lstat(); err != nil || !ok {
		return nil, err
	}
	return t.ReadFile(1 << 20)
}

// sshDir is ~/.ssh of the soul's user, as a module path.
func sshDir() string { return filepath.Join(homeDir(), ".ssh") }
