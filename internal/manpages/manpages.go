// Package manpages generates the man pages and shell completion scripts of
// keeper, soul and soulctl from their cobra command trees, the same trees
// the binaries run. The output is committed under packaging/ (the packages
// ship it, internal/install) and regenerated with
//
//	go run ./internal/manpages/genman
//
// A test fails when the committed files differ from what the trees say.
package manpages

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/soulstack/soulstack/internal/cli"
	"github.com/soulstack/soulstack/internal/keepercmd"
	"github.com/soulstack/soulstack/internal/soulcmd"
)

// Date is the date every page's header carries. It is fixed so that the
// generated files only change when a command changes; bump it when cutting a
// release (scripts/release.sh regenerates the pages).
var Date = time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)

// Tree is one binary's command tree and the man section of its pages.
type Tree struct {
	Name    string
	Section string
	Root    func() *cobra.Command
}

// Trees are the three binaries: keeper(1), soul(8) (a root daemon) and
// soulctl(1).
func Trees() []Tree {
	return []Tree{
		{Name: "keeper", Section: "1", Root: keepercmd.NewRoot},
		{Name: "soul", Section: "8", Root: soulcmd.NewRoot},
		{Name: "soulctl", Section: "1", Root: func() *cobra.Command { return cli.NewRoot(&cli.Globals{}) }},
	}
}

// Shells are the completion scripts generated per binary, with the file
// name each shell looks for: completion/<shell>/<file>.
var Shells = map[string]func(name string) string{
	"bash": func(n string) string { return n },
	"zsh":  func(n string) string { return "_" + n },
	"fish": func(n string) string { return n + ".fish" },
}

// Files returns every generated file by its path relative to packaging/:
// man/<page>.<section> and completion/<shell>/<file>.
func Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	tmp, err := os.MkdirTemp("", "soulstack-man-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, t := range Trees() {
		root := t.Root()
		root.InitDefaultCompletionCmd()
		root.DisableAutoGenTag = true
		hdr := &doc.GenManHeader{Section: t.Section, Date: &Date, Source: "Soul Stack", Manual: "Soul Stack Manual"}
		dir := filepath.Join(tmp, t.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := doc.GenManTree(root, hdr, dir); err != nil {
			return nil, fmt.Errorf("man pages of %s: %w", t.Name, err)
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			out["man/"+d.Name()] = b
			return err
		})
		if err != nil {
			return nil, err
		}
		for shell, file := range Shells {
			var b bytes.Buffer
			switch shell {
			case "bash":
				err = root.GenBashCompletionV2(&b, true)
			case "zsh":
				err = root.GenZshCompletion(&b)
			case "fish":
				err = root.GenFishCompletion(&b, true)
			}
			if err != nil {
				return nil, fmt.Errorf("%s completion of %s: %w", shell, t.Name, err)
			}
			out["completion/"+shell+"/"+file(t.Name)] = b.Bytes()
		}
	}
	return out, nil
}

// Write replaces dir's man/ and completion/ with Files.
func Write(dir string) error {
	files, err := Files()
	if err != nil {
		return err
	}
	for _, sub := range []string{"man", "completion"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	for p, b := range files {
		dst := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
