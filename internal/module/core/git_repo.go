package core

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// fdPath names an open directory by its descriptor, so go-git works below
// the directory safefs resolved, not below whatever the path names later.
func fdPath(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }

// checkoutKind says what the directory holds: "work" (a working tree with
// .git), "bare" (a bare repository) or "" (empty: a clone may go there).
func checkoutKind(dir *os.File, bare bool) (string, error) {
	names, err := dir.Readdirnames(-1)
	if _, serr := dir.Seek(0, io.SeekStart); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return "", err
	}
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	switch {
	case len(names) == 0:
		return "", nil
	case has[".git"] && !bare:
		st, err := os.Lstat(fdPath(dir) + "/.git")
		if err != nil {
			return "", err
		}
		if !st.IsDir() {
			return "", errors.New(".git is not a directory (a separate git dir or a worktree), which core.git does not manage")
		}
		return "work", nil
	case has["HEAD"] && has["objects"] && has["refs"] && bare:
		return "bare", nil
	case bare && has[".git"]:
		return "", errors.New("it is a working tree checkout, not a bare repository (bare: true)")
	case !bare && has["HEAD"] && has["objects"]:
		return "", errors.New("it is a bare repository, not a working tree checkout (set bare: true)")
	}
	return "", errors.New("it exists, is not empty and is not a git checkout: remove it or choose another dest")
}

// openRepo opens (or, with create, initializes) the repository below base,
// through a filesystem that never lets a symlink in the tree lead out of
// it.
func openRepo(base string, bare, create bool) (*git.Repository, error) {
	wt := osfs.New(base, osfs.WithBoundOS())
	dot := wt
	if !bare {
		var err error
		if dot, err = wt.Chroot(git.GitDirName); err != nil {
			return nil, err
		}
	} else {
		wt = nil
	}
	st := filesystem.NewStorage(dot, cache.NewObjectLRUDefault())
	var worktree billy.Filesystem
	if wt != nil {
		worktree = wt
	}
	if create {
		return git.Init(st, worktree)
	}
	return git.Open(st, worktree)
}

// restoreTracked resets the files the index tracks to HEAD (git reset
// --hard, but leaving untracked files alone).
func restoreTracked(repo *git.Repository, wt *git.Worktree) error {
	idx, err := repo.Storer.Index()
	if err != nil {
		return err
	}
	files := make([]string, 0, len(idx.Entries))
	for _, e := range idx.Entries {
		files = append(files, e.Name)
	}
	head, err := repo.Head()
	if err != nil {
		return err
	}
	return wt.Reset(&git.ResetOptions{Commit: head.Hash(), Mode: git.HardReset, Files: files})
}

// headHash is the commit HEAD points at ("" for an unborn branch).
func headHash(repo *git.Repository) string {
	h, err := repo.Head()
	if err != nil {
		return ""
	}
	return h.Hash().String()
}

// headBranch is the branch HEAD is on ("" when detached).
func headBranch(repo *git.Repository) string {
	ref, err := repo.Storer.Reference(plumbing.HEAD)
	if err != nil || ref.Type() != plumbing.SymbolicReference {
		return ""
	}
	return ref.Target().Short()
}

// localMods reports modifications of tracked files (staged or not);
// untracked files do not count, as in Ansible.
func localMods(repo *git.Repository) (bool, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return false, err
	}
	st, err := wt.Status()
	if err != nil {
		return false, err
	}
	for _, s := range st {
		if s.Worktree == git.Untracked && s.Staging == git.Untracked {
			continue
		}
		if s.Worktree != git.Unmodified || s.Staging != git.Unmodified {
			return true, nil
		}
	}
	return false, nil
}

// remoteURLChanged reports whether remote is missing or has another URL.
func remoteURLChanged(repo *git.Repository, remote, url string) (bool, error) {
	cfg, err := repo.Config()
	if err != nil {
		return false, err
	}
	rc, ok := cfg.Remotes[remote]
	return !ok || len(rc.URLs) == 0 || rc.URLs[0] != url, nil
}

// setRemoteURL points the remote at repo (creating it if missing).
func setRemoteURL(repo *git.Repository, r gitReq, tg gitTarget) error {
	cfg, err := repo.Config()
	if err != nil {
		return fmt.Errorf("reading the config of %s: %w", r.dest, err)
	}
	rc, ok := cfg.Remotes[r.remote]
	if !ok {
		rc = &gitconfig.RemoteConfig{Name: r.remote, Fetch: r.remoteFetchSpecs(tg)}
		cfg.Remotes[r.remote] = rc
	}
	rc.URLs = []string{r.src.url}
	if err := repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("setting the URL of remote %s in %s: %w", r.remote, r.dest, err)
	}
	return nil
}

// short abbreviates a commit SHA for messages.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "no commit"
	}
	return h
}
