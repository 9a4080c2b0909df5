// Package catalogtest builds git repositories of services in tests, with
// go-git (no git binary needed).
package catalogtest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Repo is a non-bare git repository in a temporary directory.
type Repo struct {
	Dir  string
	repo *git.Repository
	t    testing.TB
}

// NewRepo initializes an empty repository (default branch master) in a new
// temporary directory.
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	return &Repo{Dir: dir, repo: r, t: t}
}

// Commit writes files (path → content; an empty content deletes the file),
// stages everything and commits. It returns the commit hash.
func (r *Repo) Commit(files map[string]string, msg string) string {
	r.t.Helper()
	return r.CommitExec(files, nil, msg)
}

// CommitExec is Commit with the files named in exec written executable
// (a custom module's run program must be committed with mode 100755).
func (r *Repo) CommitExec(files map[string]string, exec []string, msg string) string {
	r.t.Helper()
	wt, err := r.repo.Worktree()
	if err != nil {
		r.t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if content == "" {
			if err := os.Remove(full); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
		if slices.Contains(exec, p) {
			if err := os.Chmod(full, 0o755); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		r.t.Fatal(err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{
		All:    true,
		Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Now()},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return h.String()
}

// Tag creates a lightweight tag at the current HEAD.
func (r *Repo) Tag(name string) {
	r.t.Helper()
	head, err := r.repo.Head()
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.repo.CreateTag(name, head.Hash(), nil); err != nil {
		r.t.Fatal(err)
	}
}

// AnnotatedTag creates an annotated tag at the current HEAD.
func (r *Repo) AnnotatedTag(name string) {
	r.t.Helper()
	head, err := r.repo.Head()
	if err != nil {
		r.t.Fatal(err)
	}
	_, err = r.repo.CreateTag(name, head.Hash(), &git.CreateTagOptions{
		Message: name,
		Tagger:  &object.Signature{Name: "test", Email: "test@example.com", When: time.Now()},
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// Branch creates (or moves) branch name to the current HEAD.
func (r *Repo) Branch(name string) {
	r.t.Helper()
	head, err := r.repo.Head()
	if err != nil {
		r.t.Fatal(err)
	}
	ref := plumbing.NewHashReference(plumbing.NewBranchReferenceName(name), head.Hash())
	if err := r.repo.Storer.SetReference(ref); err != nil {
		r.t.Fatal(err)
	}
}

// MyService is the seed 002 service (service.yml, essence, scenario
// create): a valid repository.
var MyService = map[string]string{
	"service.yml": `name: my-service
description: The first service on souls
state_schema:
  type: object
  properties:
    banner:
      type: string
`,
	"essence/_default.yaml": "{}\n",
	"scenario/create/main.yml": `input:
  banner_text:
    type: string
    default: "Managed by Soul Stack"

state_changes:
  sets:
    banner: "${ input.banner_text }"

tasks:
  - name: Install htop package
    module: core.pkg.installed
    params:
      name: htop

  - name: Write managed banner to motd
    module: core.file.present
    params:
      path: /etc/motd
      content: "${ input.banner_text }\n"
      mode: "0644"
`,
}

// BrokenScenario is a scenario/create/main.yml with an unknown module on
// line 4 and a misspelt task key on line 8.
const BrokenScenario = `tasks:
  - name: Install htop package
    module: core.pkg.instaled
    params:
      name: htop

  - name: Write motd
    modul: core.file.present
`

// ShellWarningScenario is a valid scenario/greet/main.yml that puts an
// input unquoted into a /bin/sh command line (line 6, column 38): the DSL
// warns (SPEC §7) but does not refuse it.
const ShellWarningScenario = `input:
  who: {type: string, default: world}
tasks:
  - name: greet
    module: core.exec.run
    params: {command: "echo hello ${ input.who }"}
`

// ShellWarningText is the warning ShellWarningScenario draws, as
// `soulctl scenario validate` prints it after the position.
const ShellWarningText = "params.command: ${ input.who } is put unquoted into a /bin/sh command line"
