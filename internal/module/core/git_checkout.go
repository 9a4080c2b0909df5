package core

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// gitClone clones into the empty directory base; undo (when set) removes
// what a failed clone left.
func gitClone(ctx context.Context, r gitReq, base string, data map[string]any, undo func()) (res domain.Result, err error) {
	defer func() {
		if err != nil && undo != nil {
			undo()
		}
	}()
	tg, err := r.remoteTarget(ctx)
	if err != nil {
		return domain.Result{}, err
	}
	repo, err := openRepo(base, r.bare, true)
	if err != nil {
		return domain.Result{}, fmt.Errorf("initializing the repository in %s: %w", r.dest, err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: r.remote, URLs: []string{r.src.url}, Fetch: r.remoteFetchSpecs(tg)}); err != nil {
		return domain.Result{}, fmt.Errorf("configuring remote %s in %s: %w", r.remote, r.dest, err)
	}
	after, err := r.fetchAndCheckout(ctx, repo, tg, false)
	if err != nil {
		return domain.Result{}, err
	}
	data["after"] = after
	return domain.Result{Changed: true, Data: data, Diff: shaDiff("", after),
		Msg: fmt.Sprintf("cloned %s at %s into %s", r.src.shown, r.version, r.dest)}, nil
}

// gitUpdate converges an existing checkout.
func gitUpdate(ctx context.Context, r gitReq, env *module.Env, base string, data map[string]any) (domain.Result, error) {
	repo, err := openRepo(base, r.bare, false)
	if err != nil {
		return domain.Result{}, fmt.Errorf("opening the repository in %s: %w", r.dest, err)
	}
	before := headHash(repo)
	data["before"], data["after"] = before, before
	if !r.update {
		return converged(fmt.Sprintf("%s exists and update is false: left at %s", r.dest, short(before)), data), nil
	}
	dirty := false
	if !r.bare {
		if dirty, err = localMods(repo); err != nil {
			return domain.Result{}, fmt.Errorf("reading the status of %s: %w", r.dest, err)
		}
		if dirty && !r.force {
			return domain.Result{}, fmt.Errorf("local modifications exist in %s (force: false): commit or discard them, or set force: true to discard them", r.dest)
		}
	}
	urlChanged, err := remoteURLChanged(repo, r.remote, r.src.url)
	if err != nil {
		return domain.Result{}, fmt.Errorf("reading remote %s of %s: %w", r.remote, r.dest, err)
	}
	data["remote_url_changed"] = urlChanged
	tg, err := r.remoteTarget(ctx)
	if err != nil {
		return domain.Result{}, err
	}
	if tg.version == "HEAD" && !r.bare {
		// An existing checkout follows the branch it is on, as git pull.
		if b := headBranch(repo); b != "" && b != tg.branch {
			if tg, err = r.branchTarget(ctx, b); err != nil {
				return domain.Result{}, err
			}
		}
	}
	if env.Check {
		after := tg.shown()
		if tg.short {
			if h, err := repo.ResolveRevision(plumbing.Revision(tg.version)); err == nil {
				after = h.String()
			} else if strings.HasPrefix(before, strings.ToLower(tg.version)) {
				after = before
			}
		}
		data["after"] = after
		return gitUpdateResult(r, before, after, dirty, urlChanged, data, true), nil
	}
	if urlChanged {
		if err := setRemoteURL(repo, r, tg); err != nil {
			return domain.Result{}, err
		}
	}
	after, err := r.fetchAndCheckout(ctx, repo, tg, dirty)
	if err != nil {
		return domain.Result{}, err
	}
	data["after"] = after
	return gitUpdateResult(r, before, after, dirty, urlChanged, data, false), nil
}

func gitUpdateResult(r gitReq, before, after string, dirty, urlChanged bool, data map[string]any, check bool) domain.Result {
	moved := before != after
	if !moved && !dirty && !urlChanged {
		return converged(fmt.Sprintf("%s is at %s (%s)", r.dest, r.version, short(after)), data)
	}
	var what []string
	if moved {
		what = append(what, fmt.Sprintf("check out %s (%s)", r.version, short(after)))
	}
	if dirty {
		what = append(what, "discard local modifications")
	}
	if urlChanged {
		what = append(what, "set remote "+r.remote+" to "+r.src.shown)
	}
	verb := "did"
	if check {
		verb = "would"
	}
	return domain.Result{Changed: true, Data: data, Diff: shaDiff(before, after),
		Msg: fmt.Sprintf("%s: %s %s", r.dest, verb, strings.Join(what, ", "))}
}

// branchTarget is the remote's head of branch b.
func (r gitReq) branchTarget(ctx context.Context, b string) (gitTarget, error) {
	refs, err := remoteRefs(ctx, r.src)
	if err != nil {
		return gitTarget{}, err
	}
	tg, err := pickTarget(refs, "refs/heads/"+b)
	if err != nil {
		return gitTarget{}, fmt.Errorf("%s: the checkout is on branch %s, which the remote does not have; set version", r.src.shown, b)
	}
	tg.version = "HEAD"
	return tg, nil
}

// remoteFetchSpecs are the refspecs recorded for the remote.
func (r gitReq) remoteFetchSpecs(tg gitTarget) []gitconfig.RefSpec {
	switch {
	case r.bare:
		return []gitconfig.RefSpec{"+refs/heads/*:refs/heads/*"}
	case r.single && tg.branch != "":
		return []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/%s/%s", tg.branch, r.remote, tg.branch))}
	}
	return []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("+refs/heads/*:refs/remotes/%s/*", r.remote))}
}

// fetchSpecs are the refspecs of one fetch: every branch (only the one
// version names with single_branch), the tag version names, and the
// refspec param.
func (r gitReq) fetchSpecs(tg gitTarget) []gitconfig.RefSpec {
	var specs []gitconfig.RefSpec
	switch {
	case r.bare:
		specs = []gitconfig.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}
	case r.single && (tg.branch != "" || tg.tag != "" || r.refspec != ""):
		specs = r.remoteFetchSpecs(tg)
		if tg.branch == "" {
			specs = nil
		}
	default:
		// Every branch; with single_branch and a bare commit too, since
		// nothing else says where the commit is.
		specs = []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("+refs/heads/*:refs/remotes/%s/*", r.remote))}
	}
	if tg.tag != "" && !r.bare {
		specs = append(specs, gitconfig.RefSpec(fmt.Sprintf("+refs/tags/%s:refs/tags/%s", tg.tag, tg.tag)))
	}
	if r.refspec != "" {
		specs = append(specs, refspecOf(r.refspec))
	}
	return specs
}

// refspecOf makes the refspec param a forced src:dst refspec: a lone src
// (refs/pull/1/head) is fetched into the same name.
func refspecOf(s string) gitconfig.RefSpec {
	s = strings.TrimPrefix(s, "+")
	if !strings.Contains(s, ":") {
		s += ":" + s
	}
	return gitconfig.RefSpec("+" + s)
}

// fetchAndCheckout fetches what version needs and checks it out; dirty
// discards local modifications first.
func (r gitReq) fetchAndCheckout(ctx context.Context, repo *git.Repository, tg gitTarget, dirty bool) (string, error) {
	specs := r.fetchSpecs(tg)
	for _, s := range specs {
		if err := s.Validate(); err != nil {
			return "", fmt.Errorf("param \"refspec\": %q: %w", r.refspec, err)
		}
	}
	tags := git.AllTags
	if r.single || r.depth > 0 {
		tags = git.NoTags
	}
	opts := &git.FetchOptions{RemoteName: r.remote, RefSpecs: specs, Tags: tags, Force: true, Auth: r.src.auth}
	if r.src.local {
		opts.RemoteURL = r.src.fetchURL
	} else {
		opts.Depth = r.depth
	}
	err := repo.FetchContext(ctx, opts)
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return "", fmt.Errorf("repository %s is empty", r.src.shown)
		}
		return "", r.src.wrap("fetching from", err)
	}
	h, err := r.resolveLocal(repo, tg)
	if err != nil {
		return "", err
	}
	if r.bare {
		if tg.branch != "" {
			if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(tg.branch))); err != nil {
				return "", fmt.Errorf("setting HEAD of %s: %w", r.dest, err)
			}
		}
		return headHash(repo), nil
	}
	if err := r.checkout(repo, tg, h, dirty); err != nil {
		return "", err
	}
	if r.recursive {
		if err := updateSubmodules(ctx, repo, r); err != nil {
			return "", err
		}
	}
	return headHash(repo), nil
}

// resolveLocal finds version's commit in the fetched repository.
func (r gitReq) resolveLocal(repo *git.Repository, tg gitTarget) (plumbing.Hash, error) {
	var h plumbing.Hash
	switch {
	case tg.branch != "" && !r.bare:
		ref, err := repo.Reference(plumbing.NewRemoteReferenceName(r.remote, tg.branch), true)
		if err != nil {
			return h, fmt.Errorf("branch %s was not fetched from %s: %w", tg.branch, r.src.shown, err)
		}
		h = ref.Hash()
	case tg.branch != "" && r.bare:
		ref, err := repo.Reference(plumbing.NewBranchReferenceName(tg.branch), true)
		if err != nil {
			return h, fmt.Errorf("branch %s was not fetched from %s: %w", tg.branch, r.src.shown, err)
		}
		h = ref.Hash()
	case tg.tag != "":
		ref, err := repo.Reference(plumbing.NewTagReferenceName(tg.tag), true)
		if err != nil {
			return h, fmt.Errorf("tag %s was not fetched from %s: %w", tg.tag, r.src.shown, err)
		}
		h = ref.Hash()
	default:
		p, err := repo.ResolveRevision(plumbing.Revision(tg.version))
		if err != nil {
			hint := ""
			if r.depth > 0 || r.single {
				hint = " (with depth or single_branch the commit may not have been fetched)"
			}
			return h, fmt.Errorf("version %q is not a commit of %s%s", tg.version, r.src.shown, hint)
		}
		h = *p
	}
	if t, err := repo.TagObject(h); err == nil {
		c, err := t.Commit()
		if err != nil {
			return h, fmt.Errorf("tag %s does not point at a commit: %w", tg.version, err)
		}
		return c.Hash, nil
	}
	if _, err := repo.CommitObject(h); err != nil {
		return h, fmt.Errorf("version %q (%s) is not a commit of %s: %w", tg.version, short(h.String()), r.src.shown, err)
	}
	return h, nil
}

// checkout moves the working tree to h: on branch tg.branch (reset to h,
// tracking the remote) or detached for a tag or commit. With dirty, the
// tracked files are first restored to HEAD (force); untracked files are
// never removed.
func (r gitReq) checkout(repo *git.Repository, tg gitTarget, h plumbing.Hash, dirty bool) error {
	wt, err := repo.Worktree()
	if err != nil {
		return fmt.Errorf("opening the working tree of %s: %w", r.dest, err)
	}
	if dirty {
		if err := restoreTracked(repo, wt); err != nil {
			return fmt.Errorf("discarding the local modifications in %s: %w", r.dest, err)
		}
	}
	head, _ := repo.Head()
	if tg.branch == "" {
		if head != nil && headBranch(repo) == "" && head.Hash() == h {
			return nil
		}
		if err := wt.Checkout(&git.CheckoutOptions{Hash: h}); err != nil {
			return fmt.Errorf("checking out %s in %s: %w", tg.version, r.dest, err)
		}
		return nil
	}
	name := plumbing.NewBranchReferenceName(tg.branch)
	if head != nil && head.Name() == name && head.Hash() == h {
		return nil
	}
	if _, err := repo.Branch(tg.branch); errors.Is(err, git.ErrBranchNotFound) {
		if err := repo.CreateBranch(&gitconfig.Branch{Name: tg.branch, Remote: r.remote, Merge: name}); err != nil {
			return fmt.Errorf("configuring branch %s of %s: %w", tg.branch, r.dest, err)
		}
	}
	// Point the branch at h first: checking it out then moves the tree
	// from the current index to h (as git reset --hard origin/branch).
	if err := repo.Storer.SetReference(plumbing.NewHashReference(name, h)); err != nil {
		return fmt.Errorf("setting branch %s of %s: %w", tg.branch, r.dest, err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Branch: name}); err != nil {
		return fmt.Errorf("checking out %s in %s: %w", tg.version, r.dest, err)
	}
	return nil
}

// updateSubmodules clones and updates the submodules, recursively.
func updateSubmodules(ctx context.Context, repo *git.Repository, r gitReq) error {
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	subs, err := wt.Submodules()
	if err != nil {
		return fmt.Errorf("reading the submodules of %s: %w", r.dest, err)
	}
	if len(subs) == 0 {
		return nil
	}
	err = subs.UpdateContext(ctx, &git.SubmoduleUpdateOptions{Init: true, RecurseSubmodules: git.DefaultSubmoduleRecursionDepth, Auth: r.src.auth})
	if err != nil {
		return fmt.Errorf("updating the submodules of %s: %w", r.dest, err)
	}
	return nil
}
