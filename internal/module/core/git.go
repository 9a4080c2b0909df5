package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	// Set once, before any goroutine runs, and read-only afterwards: the
	// private scheme only core.git uses (see localScheme).
	client.InstallProtocol(localScheme, server.NewClient(localLoader{}))
	register("core.git", module.Schema{
		Summary: "Clone a git repository and check out a version (Ansible's git), by library: the host needs no git program",
		Params: map[string]module.Param{
			"repo": {Type: module.TypeString, Required: true, Check: checkRepo,
				Description: "the repository: https://, http://, ssh://, git:// or file:// URL, user@host:path (ssh), or an absolute path on the host"},
			"dest": {Type: module.TypeString, Check: checkAbs, Description: "absolute path of the checkout (of the repository itself with bare: true); created with its parents when missing. " +
				"Required unless clone: false, which with no dest only reports the remote's commit for version"},
			"version": {Type: module.TypeString, Default: "HEAD", Description: "what to check out: HEAD (the remote's default branch; " +
				"on an existing checkout, the branch it is on), a branch, a tag (annotated or not), a full ref name, or a full or abbreviated commit SHA"},
			"force": {Type: module.TypeBool, Default: false, Description: "discard local modifications of tracked files; without it a checkout with local " +
				"modifications is an error (untracked files are kept either way)"},
			"depth": {Type: module.TypeInt, Description: "shallow clone or fetch with this many commits of history (ignored for local repositories, " +
				"as git does for a plain path)"},
			"update": {Type: module.TypeBool, Default: true, Description: "false: leave an existing checkout alone (no fetch, no checkout) and report its commit"},
			"clone":  {Type: module.TypeBool, Default: true, Description: "false: do not clone when dest is absent; only report the remote's commit for version"},
			"remote": {Type: module.TypeString, Default: "origin", Description: "name of the remote"},
			"bare":   {Type: module.TypeBool, Default: false, Description: "dest is a bare repository (no working tree), with all branches and tags"},
			"single_branch": {Type: module.TypeBool, Default: false, Description: "fetch only the branch (or tag) version names, " +
				"not every branch and tag"},
			"refspec": {Type: module.TypeString, Check: checkRefspec,
				Description: "an extra refspec to fetch (e.g. refs/pull/1/head, or src:dst), so version may name a commit only it reaches"},
			"recursive": {Type: module.TypeBool, Default: true, Description: "also clone and update the submodules, recursively"},
			"accept_hostkey": {Type: module.TypeBool, Default: false, Description: "ssh: accept an unknown host key and record it in ~/.ssh/known_hosts " +
				"(a key that differs from a recorded one is still refused)"},
			"accept_newhostkey": {Type: module.TypeBool, Default: false, Description: "ssh: same as accept_hostkey (OpenSSH's StrictHostKeyChecking=accept-new)"},
			"key_file": {Type: module.TypeString, Check: checkAbs,
				Description: "ssh: absolute path on the host of the private key to use (without passphrase); default: ~/.ssh/id_ed25519, id_ecdsa, id_rsa and the ssh agent"},
			"ssh_opts": {Type: module.TypeString, Check: func(s string) error { return parseSSHOpts(s, &sshOptions{}) },
				Description: "ssh: a subset of ssh options: -i FILE, -o StrictHostKeyChecking=no|accept-new|yes, -o UserKnownHostsFile=FILE (other options are refused)"},
		},
		Output: map[string]module.Field{
			"before":             outputField(module.TypeString, "commit SHA checked out before the task (\"\" when there was no checkout)"),
			"after":              outputField(module.TypeString, "commit SHA checked out after it (in check mode: that would be; with clone: false, the remote's)"),
			"remote_url_changed": outputField(module.TypeBool, "the remote's URL was changed to repo"),
		},
		Example: "- name: app source\n  module: core.git\n  params:\n    repo: https://github.com/example/app.git\n    dest: /srv/app\n    version: v1.2.0\n",
	}, gitCheckout)
}

// checkAbs refuses a relative path at validation.
func checkAbs(s string) error {
	if !strings.HasPrefix(s, "/") {
		return fmt.Errorf("%q must be an absolute path", s)
	}
	return nil
}

// checkRepo refuses a repo core.git cannot reach, at validation.
func checkRepo(s string) error {
	_, _, err := classifyRepo(s)
	return err
}

// checkRefspec refuses a malformed refspec at validation.
func checkRefspec(s string) error {
	return refspecOf(s).Validate()
}

// gitReq is one core.git call's params, decoded.
type gitReq struct {
	src                                gitSource
	dest, version, remote, refspec     string
	force, update, clone, bare, single bool
	recursive                          bool
	depth                              int
	ssh                                sshOptions
}

func parseGitReq(env *module.Env, p map[string]any) (gitReq, error) {
	a := newArgs(p)
	r := gitReq{
		dest: a.str("dest"), version: a.str("version"), remote: a.str("remote"), refspec: a.str("refspec"),
		force: a.boolean("force", false), update: a.boolean("update", true), clone: a.boolean("clone", true),
		bare: a.boolean("bare", false), single: a.boolean("single_branch", false), recursive: a.boolean("recursive", true),
		ssh: sshOptions{keyFile: a.str("key_file"), acceptNew: a.boolean("accept_hostkey", false) || a.boolean("accept_newhostkey", false)},
	}
	repo := a.str("repo")
	depth, hasDepth := a.integer("depth")
	opts := a.str("ssh_opts")
	if a.err != nil {
		return r, a.err
	}
	if r.version == "" {
		r.version = "HEAD"
	}
	if r.remote == "" {
		r.remote = "origin"
	}
	if hasDepth {
		if depth < 1 {
			return r, fmt.Errorf("param \"depth\": must be a positive integer, got %d", depth)
		}
		r.depth = int(depth)
	}
	if r.dest == "" && r.clone {
		return r, errors.New("param \"dest\" is required unless clone: false")
	}
	for k, v := range map[string]string{"dest": r.dest, "key_file": r.ssh.keyFile} {
		if err := checkAbs(v); v != "" && err != nil {
			return r, fmt.Errorf("param %q: %w", k, err)
		}
	}
	if err := parseSSHOpts(opts, &r.ssh); err != nil {
		return r, err
	}
	src, err := parseGitSource(env, repo)
	if err != nil {
		return r, err
	}
	r.src = src
	return r, nil
}

// parseSSHOpts maps the ssh options core.git can honour onto o.
func parseSSHOpts(s string, o *sshOptions) error {
	f := strings.Fields(s)
	for i := 0; i < len(f); i++ {
		opt, val := f[i], ""
		switch {
		case opt == "-i" || opt == "-o":
			if i+1 >= len(f) {
				return fmt.Errorf("param \"ssh_opts\": %s needs a value", opt)
			}
			i++
			val = f[i]
		case strings.HasPrefix(opt, "-i") || strings.HasPrefix(opt, "-o"):
			opt, val = opt[:2], opt[2:]
		default:
			return fmt.Errorf("param \"ssh_opts\": option %q is not supported (only -i FILE, -o StrictHostKeyChecking=…, -o UserKnownHostsFile=FILE)", opt)
		}
		if opt == "-i" {
			if o.keyFile == "" {
				o.keyFile = val
			}
			continue
		}
		k, v, _ := strings.Cut(val, "=")
		switch strings.ToLower(k) {
		case "stricthostkeychecking":
			switch strings.ToLower(v) {
			case "no", "accept-new", "off":
				o.acceptNew = true
			case "yes", "ask":
			default:
				return fmt.Errorf("param \"ssh_opts\": StrictHostKeyChecking=%q is not one of yes, no, accept-new", v)
			}
		case "userknownhostsfile":
			if !strings.HasPrefix(v, "/") {
				return fmt.Errorf("param \"ssh_opts\": UserKnownHostsFile=%q must be an absolute path", v)
			}
			o.knownHosts = v
		default:
			return fmt.Errorf("param \"ssh_opts\": -o %s is not supported (only StrictHostKeyChecking and UserKnownHostsFile)", k)
		}
	}
	return nil
}

// gitCheckout converges dest to a checkout of repo at version: it clones
// when dest is absent (or an empty directory), and otherwise fetches and
// moves the checkout when the wanted commit differs. changed means the
// checkout was created or moved, local modifications were discarded, or
// the remote's URL was changed. In check mode the remote is only listed
// (ls-remote).
func gitCheckout(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	if env.InKeeper {
		// The Keeper's outbound traffic goes through its http.allow policy;
		// go-git's transports would bypass it.
		return domain.Result{}, errors.New("core.git does not run inside the Keeper (on: keeper): target souls")
	}
	r, err := parseGitReq(env, p)
	if err != nil {
		return domain.Result{}, err
	}
	if r.src.ssh {
		r.ssh.defaultUser = sshLogin()
		if ep, err := transport.NewEndpoint(r.src.url); err == nil && ep.User != "" {
			r.ssh.defaultUser = ep.User
		}
		am, err := sshAuth(env, r.ssh)
		if err != nil {
			return domain.Result{}, err
		}
		r.src.auth = am
	}
	data := map[string]any{"before": "", "after": "", "remote_url_changed": false}
	if r.dest == "" {
		return gitRemoteOnly(ctx, r, data, "no dest: reported the remote's commit")
	}
	t, err := fsOf(env).Open(r.dest, safefs.Options{Follow: true, MakeDirs: !env.Check})
	if errors.Is(err, fs.ErrNotExist) && env.Check {
		return gitCloneCheck(ctx, r, data)
	}
	if err != nil {
		return domain.Result{}, fmt.Errorf("param \"dest\": %w", err)
	}
	defer t.Close()
	info, exists, err := t.Lstat()
	if err != nil {
		return domain.Result{}, fmt.Errorf("param \"dest\": %w", err)
	}
	if exists && !info.IsDir() {
		return domain.Result{}, fmt.Errorf("param \"dest\": %s exists and is not a directory", r.dest)
	}
	if exists {
		dir, err := t.OpenDir()
		if err != nil {
			return domain.Result{}, fmt.Errorf("param \"dest\": %w", err)
		}
		defer dir.Close()
		kind, err := checkoutKind(dir, r.bare)
		if err != nil {
			return domain.Result{}, fmt.Errorf("param \"dest\": %s: %w", r.dest, err)
		}
		if kind != "" {
			return gitUpdate(ctx, r, env, fdPath(dir), data)
		}
		// An empty directory: clone into it.
		if !r.clone {
			return gitRemoteOnly(ctx, r, data, fmt.Sprintf("%s is empty and clone is false: nothing was cloned", r.dest))
		}
		if env.Check {
			return gitCloneCheck(ctx, r, data)
		}
		return gitClone(ctx, r, fdPath(dir), data, nil)
	}
	if !r.clone {
		return gitRemoteOnly(ctx, r, data, fmt.Sprintf("%s does not exist and clone is false: nothing was cloned", r.dest))
	}
	if env.Check {
		return gitCloneCheck(ctx, r, data)
	}
	m := fs.FileMode(0o755)
	if err := t.Mkdir(safefs.Attrs{UID: -1, GID: -1, Mode: &m}); err != nil {
		return domain.Result{}, fmt.Errorf("param \"dest\": %w", err)
	}
	dir, err := t.OpenDir()
	if err != nil {
		return domain.Result{}, fmt.Errorf("param \"dest\": %w", err)
	}
	defer dir.Close()
	return gitClone(ctx, r, fdPath(dir), data, func() { _ = t.Remove() })
}

// gitRemoteOnly reports the remote's commit for version and changes
// nothing (clone: false, or no dest).
func gitRemoteOnly(ctx context.Context, r gitReq, data map[string]any, msg string) (domain.Result, error) {
	tg, err := r.remoteTarget(ctx)
	if err != nil {
		return domain.Result{}, err
	}
	data["after"] = tg.shown()
	return converged(msg, data), nil
}

// gitCloneCheck is check mode on an absent dest: it would clone.
func gitCloneCheck(ctx context.Context, r gitReq, data map[string]any) (domain.Result, error) {
	tg, err := r.remoteTarget(ctx)
	if err != nil {
		return domain.Result{}, err
	}
	data["after"] = tg.shown()
	return domain.Result{Changed: true, Data: data, Diff: shaDiff("", tg.shown()),
		Msg: fmt.Sprintf("would clone %s at %s into %s", r.src.shown, r.version, r.dest)}, nil
}

// remoteTarget lists the remote and resolves version there.
func (r gitReq) remoteTarget(ctx context.Context) (gitTarget, error) {
	refs, err := remoteRefs(ctx, r.src)
	if err != nil {
		return gitTarget{}, err
	}
	tg, err := pickTarget(refs, r.version)
	if err != nil {
		return gitTarget{}, fmt.Errorf("%s: %w", r.src.shown, err)
	}
	if tg.tag != "" && r.src.local {
		// go-git's server does not advertise peeled tags: peel an
		// annotated tag in the (local) source itself.
		if src, err := git.PlainOpen(r.src.localPath); err == nil {
			if t, err := src.TagObject(tg.hash); err == nil {
				if c, err := t.Commit(); err == nil {
					tg.hash = c.Hash
				}
			}
		}
	}
	return tg, nil
}

// shown is the commit for before/after: the SHA, or version itself when
// it is an abbreviated SHA only a fetch can resolve.
func (t gitTarget) shown() string {
	if t.hash.IsZero() {
		return t.version
	}
	return t.hash.String()
}

// shaDiff is the diff of a checkout moving from before to after.
func shaDiff(before, after string) string {
	if before == "" {
		before = "(absent)"
	}
	return fmt.Sprintf("- %s\n+ %s\n", before, after)
}
