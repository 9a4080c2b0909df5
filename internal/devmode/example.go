package devmode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
)

// exampleBranch is the branch the example is committed on and registered
// at.
const exampleBranch = "main"

// syncRepo makes dir a git repository whose branch main holds exactly the
// files of src, committing when they changed, and returns the head commit.
// Edits to the example land in the next dev start as a new commit.
func syncRepo(dir string, src fs.FS) (string, error) {
	repo, err := git.PlainOpen(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.PlainInitWithOptions(dir, &git.PlainInitOptions{
			InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(exampleBranch)},
		})
	}
	if err != nil {
		return "", fmt.Errorf("example repository %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("example repository %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return "", fmt.Errorf("example repository %s: %w", dir, err)
			}
		}
	}
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("writing the example into %s: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("example repository %s: %w", dir, err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("example repository %s: staging: %w", dir, err)
	}
	st, err := wt.Status()
	if err != nil {
		return "", fmt.Errorf("example repository %s: %w", dir, err)
	}
	head, headErr := repo.Head()
	if st.IsClean() && headErr == nil {
		return head.Hash().String(), nil
	}
	h, err := wt.Commit("hello example, as bundled with keeper dev", &git.CommitOptions{
		All:               true,
		AllowEmptyCommits: headErr != nil,
		Author:            &object.Signature{Name: "keeper dev", Email: "dev@soulstack.invalid", When: time.Now()},
	})
	if err != nil {
		return "", fmt.Errorf("example repository %s: committing: %w", dir, err)
	}
	return h.String(), nil
}

// registerService registers name from the local repository at ref, or
// moves an already registered one to the repository's current commit.
func registerService(ctx context.Context, cl *apiclient.Client, name, git, ref string) (string, error) {
	svc, err := cl.RegisterService(ctx, apitypes.RegisterServiceRequest{Name: name, Git: git, Ref: ref})
	if apiclient.IsCode(err, domain.CodeConflict) {
		svc, err = cl.UpdateService(ctx, name, apitypes.UpdateServiceRequest{Ref: ref, Git: git})
	}
	if err != nil {
		var ae *apiclient.APIError
		if errors.As(err, &ae) {
			for _, p := range ae.Problems() {
				err = fmt.Errorf("%w\n  %s", err, p.Text)
			}
		}
		return "", fmt.Errorf("registering service %s: %w", name, err)
	}
	return svc.Commit, nil
}
