package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	signedBy := str(false, "apt: the repository's ASCII-armored public key (embedded in the file) or a keyring path")
	signedBy.Check = checkSignedBy
	registerNamed("core.pkg.repository", module.Schema{
		Summary: "Ensure a package repository: an apt deb822 .sources file (signed_by key) or a dnf .repo file; the index is refreshed only when the file changed",
		Params: map[string]module.Param{
			"name":          str(true, "repository id: the file name (letters, digits, . _ -)"),
			"state":         {Type: module.TypeString, Default: "present", Description: "present or absent"},
			"uris":          typed(module.TypeStrList, "apt: repository URIs"),
			"suites":        typed(module.TypeStrList, `apt: suites, e.g. [bookworm] ("./" for a flat repository)`),
			"components":    typed(module.TypeStrList, "apt: components, e.g. [main]"),
			"types":         typed(module.TypeStrList, "apt: deb and/or deb-src (default [deb])"),
			"architectures": typed(module.TypeStrList, "apt: architectures to fetch"),
			"signed_by":     signedBy,
			"trusted":       {Type: module.TypeBool, Default: false, Description: "apt: trust the repository without a signature (local repositories only)"},
			"baseurl":       str(false, "dnf: base URL(s), space-separated"),
			"gpgkey":        str(false, "dnf: key URL(s), space-separated"),
			"gpgcheck":      {Type: module.TypeBool, Default: true, Description: "dnf: check package signatures"},
			"description":   str(false, "dnf: the repository's name= line"),
			"enabled":       {Type: module.TypeBool, Default: true, Description: "the repository is used"},
			"update_cache":  {Type: module.TypeBool, Default: true, Description: "refresh the package index when the file changed"},
			"ppa":           str(false, "apt: ppa:owner/name shorthand (Ubuntu), as Ansible's apt_repository: the Launchpad archive for the host's os.codename, component main, its signing key fetched (fingerprint from Launchpad's API, key from the keyserver) and embedded as signed_by; instead of uris/suites/components/signed_by. Tested against a local stand-in server only, not against Launchpad"),
			"ppa_api":       str(false, "with ppa: Launchpad's API base URL (default "+launchpadAPI+")"),
			"keyserver":     str(false, "with ppa: the keyserver's base URL (default "+ubuntuKeyserver+")"),
		},
		Unconfinable: true,
		Output: withFields(fileOutput, map[string]module.Field{
			"manager":         outputField(module.TypeString, "apt-get, dnf or yum"),
			"cache_refreshed": outputField(module.TypeBool, "the package index was refreshed because the file changed"),
		}),
		Example: `- name: The app's apt repository
  module: core.pkg.repository
  params:
    name: example-app
    uris: [https://apt.example.com/debian]
    suites: [bookworm]
    components: [main]
    signed_by: |
      -----BEGIN PGP PUBLIC KEY BLOCK-----

      mDMEZ…
      -----END PGP PUBLIC KEY BLOCK-----
`,
	}, pkgRepository)
}

var repoNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// repoSpec is one repository, as the families render it.
type repoSpec struct {
	name                                           string
	uris, suites, components, types, architectures []string
	signedBy                                       string
	trusted, enabled, gpgcheck                     bool
	baseurl, gpgkey, description                   string
}

func pkgRepository(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	r := repoSpec{name: a.str("name"), uris: a.strList("uris"), suites: a.strList("suites"), components: a.strList("components"),
		types: a.strList("types"), architectures: a.strList("architectures"), signedBy: a.str("signed_by"),
		trusted: a.boolean("trusted", false), enabled: a.boolean("enabled", true), gpgcheck: a.boolean("gpgcheck", true),
		baseurl: a.str("baseurl"), gpgkey: a.str("gpgkey"), description: a.str("description")}
	state, update := a.str("state"), a.boolean("update_cache", true)
	ppa, api, keyserver := a.str("ppa"), a.str("ppa_api"), a.str("keyserver")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if ppa == "" && (api != "" || keyserver != "") {
		return domain.Result{}, paramErr("ppa_api", "ppa_api and keyserver go with ppa")
	}
	if ppa != "" && state != "absent" {
		for _, p := range []string{"uris", "suites", "components", "signed_by", "baseurl"} {
			if a.has(p) {
				return domain.Result{}, paramErr("ppa", "stands for the repository's URI, suite, component and key; it cannot go with %s", p)
			}
		}
		if api == "" {
			api = launchpadAPI
		}
		if keyserver == "" {
			keyserver = ubuntuKeyserver
		}
		src, err := resolvePPA(ctx, ppa, factString(env.Facts, "os.codename"), api, keyserver)
		if err != nil {
			return domain.Result{}, err
		}
		r.uris, r.suites, r.components, r.signedBy = []string{src.uri}, []string{src.suite}, []string{src.component}, src.key
	}
	if !repoNameRe.MatchString(r.name) {
		return domain.Result{}, paramErr("name", "%q: letters, digits, . _ and - only", r.name)
	}
	if state != "present" && state != "absent" && state != "" {
		return domain.Result{}, paramErr("state", "%q: want present or absent", state)
	}
	mgr, err := pickManager(env)
	if err != nil {
		return domain.Result{}, err
	}
	file := mgr.repoPath(r.name)
	var content []byte
	if state != "absent" {
		if content, err = mgr.repoFile(r); err != nil {
			return domain.Result{}, err
		}
	}
	var res domain.Result
	if state == "absent" {
		res, err = removeRepoFile(env, file)
	} else {
		res, err = ensureFile(ctx, env, fileWant{path: file, content: content, hasContent: true, mode: 0o644, hasMode: true, uid: 0, gid: 0})
	}
	if err != nil {
		return domain.Result{}, err
	}
	if res.Data == nil {
		res.Data = map[string]any{"path": file}
	}
	res.Data["manager"] = mgr.name()
	res.Data["cache_refreshed"] = false
	if res.Changed && update && !env.Check {
		if err := mgr.refresh(ctx, env); err != nil {
			return domain.Result{}, fmt.Errorf("%s was written, but %w", file, err)
		}
		res.Data["cache_refreshed"] = true
		res.Msg += "; package index refreshed"
	}
	return res, nil
}

// removeRepoFile removes a repository file (state: absent).
func removeRepoFile(env *module.Env, file string) (domain.Result, error) {
	data := map[string]any{"path": file}
	t, err := fsOf(env).Open(file, safefs.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return converged(file+" does not exist", data), nil
	}
	if err != nil {
		return domain.Result{}, err
	}
	defer t.Close()
	_, exists, err := t.Lstat()
	if err != nil {
		return domain.Result{}, err
	}
	if !exists {
		return converged(file+" does not exist", data), nil
	}
	diff := "remove " + file + "\n"
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: "would have removed " + file, Data: data}, nil
	}
	if err := t.Remove(); err != nil {
		return domain.Result{}, err
	}
	return domain.Result{Changed: true, Diff: diff, Msg: "removed " + file, Data: data}, nil
}
