package manpages_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/manpages"
)

// plain drops roff font changes and Markdown code quotes.
func plain(s string) string {
	return strings.NewReplacer(`\fB`, "", `\fR`, "", `\fP`, "", `\fI`, "", "`", "").Replace(s)
}

func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, s := range c.Commands() {
		out = append(out, allCommands(s)...)
	}
	return out
}

// The committed man pages and completion scripts under packaging/ are
// exactly what the command trees generate: a new flag, command or help
// text without `go run ./internal/manpages/genman` fails here.
func TestCommittedFilesMatchTheTrees(t *testing.T) {
	want, err := manpages.Files()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "packaging")
	got := map[string][]byte{}
	for _, sub := range []string{"man", "completion"} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			got[filepath.ToSlash(rel)] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	const fix = "; run: go run ./internal/manpages/genman"
	for p, b := range want {
		g, ok := got[p]
		switch {
		case !ok:
			t.Errorf("packaging/%s is missing%s", p, fix)
		case string(g) != string(b):
			t.Errorf("packaging/%s is out of date%s", p, fix)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("packaging/%s names no command any more%s", p, fix)
		}
	}
}

// Every command of every tree has its page, in the binary's section, and
// the pages say what the commands' help says.
func TestEveryCommandHasAPage(t *testing.T) {
	files, err := manpages.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range manpages.Trees() {
		root := tr.Root()
		n := 0
		for _, c := range allCommands(root) {
			if !c.IsAvailableCommand() && c != root {
				continue
			}
			page := "man/" + strings.ReplaceAll(c.CommandPath(), " ", "-") + "." + tr.Section
			b, ok := files[page]
			if !ok {
				t.Errorf("%s has no page %s", c.CommandPath(), page)
				continue
			}
			if !strings.Contains(plain(string(b)), plain(c.Short)) {
				t.Errorf("%s does not carry the command's summary %q", page, c.Short)
			}
			n++
		}
		if n < 3 {
			t.Errorf("%s: only %d pages", tr.Name, n)
		}
	}
	for _, p := range []string{"man/keeper.1", "man/soul.8", "man/soulctl.1", "man/soulctl-incarnation-run.1", "completion/bash/soulctl", "completion/zsh/_soulctl", "completion/fish/soulctl.fish"} {
		if _, ok := files[p]; !ok {
			t.Errorf("no %s", p)
		}
	}
}
