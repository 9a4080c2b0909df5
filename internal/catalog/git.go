package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// source is where a service's repository lives: a local path opened in
// place, or a remote URL mirrored into the data directory.
type source struct {
	raw   string // as registered
	local string // absolute path for local sources, "" for remote ones
}

// parseSource classifies a git location: file:// URLs and plain paths are
// local; http(s)://, ssh://, git:// and scp-like user@host:path are remote.
func parseSource(raw string) (source, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return source{}, domain.Errorf(domain.CodeInvalid, "git is required: a repository URL (https://, ssh://, file://) or a local path")
	}
	if strings.HasPrefix(raw, "file://") {
		u, err := url.Parse(raw)
		if err != nil || u.Path == "" {
			return source{}, domain.Errorf(domain.CodeInvalid, "git %q is not a valid file:// URL", raw)
		}
		return source{raw: raw, local: filepath.Clean(u.Path)}, nil
	}
	if i := strings.Index(raw, "://"); i > 0 {
		switch strings.ToLower(raw[:i]) {
		case "http", "https", "ssh", "git":
			return source{raw: raw}, nil
		default:
			return source{}, domain.Errorf(domain.CodeInvalid, "git URL scheme %q is not supported: use https, ssh, git or file", raw[:i])
		}
	}
	// scp-like syntax (git@host:org/repo.git) has a colon before any slash.
	if c := strings.Index(raw, ":"); c > 0 && !strings.Contains(raw[:c], "/") {
		return source{raw: raw}, nil
	}
	abs, err := filepath.Abs(raw)
	if err != nil {
		return source{}, domain.Errorf(domain.CodeInvalid, "git path %q: %v", raw, err)
	}
	return source{raw: raw, local: abs}, nil
}

// redacted is the source for messages and logs (no URL password).
func (s source) redacted() string { return auth.RedactURL(s.raw) }

// open returns the repository holding the source's objects: the local
// repository itself, or the mirror of a remote one, fetched now.
func (c *Catalog) open(ctx context.Context, src source) (*git.Repository, error) {
	if src.local != "" {
		repo, err := git.PlainOpenWithOptions(src.local, &git.PlainOpenOptions{DetectDotGit: false})
		if err != nil {
			return nil, &domain.Error{Code: domain.CodeUnprocessable,
				Message: fmt.Sprintf("cannot open git repository %s: %v", src.local, err), Err: err}
		}
		return repo, nil
	}
	return c.fetchMirror(ctx, src)
}

// fetchMirror keeps a bare mirror of a remote repository under
// <dir>/.mirrors/<hash of the URL> and fetches every branch and tag into it.
func (c *Catalog) fetchMirror(ctx context.Context, src source) (*git.Repository, error) {
	sum := sha256.Sum256([]byte(src.raw))
	dir := filepath.Join(c.cfg.Dir, ".mirrors", hex.EncodeToString(sum[:12])+".git")
	unlock := c.lock("mirror:" + dir)
	defer unlock()

	repo, err := git.PlainOpen(dir)
	fresh := errors.Is(err, git.ErrRepositoryNotExists)
	if fresh {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return nil, fmt.Errorf("creating mirror directory: %w", err)
		}
		repo, err = git.PlainInit(dir, true)
		if err == nil {
			_, err = repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{src.raw}})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening mirror of %s: %w", src.redacted(), err)
	}
	authm, err := c.authFor(src)
	if err != nil {
		return nil, err
	}
	err = repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   []gitconfig.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"},
		Auth:       authm,
		Tags:       git.NoTags,
		Force:      true,
		Prune:      true,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) && fresh {
		// A source never fetched (a mistyped URL, a host down) leaves no
		// empty mirror behind.
		_ = os.RemoveAll(dir)
	}
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return repo, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil, &domain.Error{Code: domain.CodeUnprocessable, Message: fmt.Sprintf("git repository %s is empty", src.redacted()), Err: err}
	default:
		return nil, &domain.Error{Code: domain.CodeUnprocessable,
			Message: fmt.Sprintf("cannot fetch %s: %v", src.redacted(), redactErr(err, src.raw)), Err: err}
	}
}

// authFor returns the credentials for src: the configured SSH key for ssh
// sources (go-git's default, the SSH agent, otherwise); https credentials
// come from the URL itself.
func (c *Catalog) authFor(src source) (transport.AuthMethod, error) {
	if c.cfg.SSHKeyFile == "" {
		return nil, nil
	}
	ep, err := transport.NewEndpoint(src.raw)
	if err != nil || ep.Protocol != "ssh" {
		return nil, nil
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	pk, err := gitssh.NewPublicKeysFromFile(user, c.cfg.SSHKeyFile, "")
	if err != nil {
		return nil, fmt.Errorf("loading SSH key %s: %w", c.cfg.SSHKeyFile, err)
	}
	return pk, nil
}

// resolve turns ref (branch, tag, full or abbreviated commit) into a commit
// hash. A ref the repository does not have is CodeUnprocessable.
func resolve(repo *git.Repository, src source, ref string) (plumbing.Hash, error) {
	h, err := repo.ResolveRevision(plumbing.Revision(ref))
	if err != nil || h == nil || h.IsZero() {
		return plumbing.ZeroHash, &domain.Error{Code: domain.CodeUnprocessable,
			Message: fmt.Sprintf("ref %q not found in %s: no branch, tag or commit by that name", ref, src.redacted()), Err: err}
	}
	return *h, nil
}

// redactErr removes a URL's password from an error message of go-git.
func redactErr(err error, raw string) string {
	msg := err.Error()
	if r := auth.RedactURL(raw); r != raw {
		msg = strings.ReplaceAll(msg, raw, r)
	}
	return msg
}
