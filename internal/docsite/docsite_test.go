package docsite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
)

var repoRoot = filepath.Join("..", "..")

// pages are the Markdown files whose links are checked: the README and
// every page of docs/.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(repoRoot, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("only %d pages: %v", len(out), out)
	}
	return out
}

var (
	linkRE   = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	codeRE   = regexp.MustCompile("`[^`]*`")
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// links returns the link targets of a Markdown page outside code, by line.
func links(md []byte) map[int][]string {
	out := map[int][]string{}
	fence := false
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(l, ""), -1) {
			out[n] = append(out[n], m[1])
		}
	}
	return out
}

// anchors returns the heading anchors of a Markdown page as GitHub and
// mkdocs make them (lower case, punctuation dropped, spaces as hyphens;
// repeats numbered).
func anchors(md []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		}
		seen[a]++
		out[a] = true
	}
	return out
}

// TestInternalLinks: every relative link of the README and of docs/ names
// a file or directory of the repository, and every #anchor a heading of
// the page it points to, so moving text between pages cannot leave a
// broken link behind.
func TestInternalLinks(t *testing.T) {
	checked := 0
	for _, page := range pages(t) {
		md, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
		if err != nil {
			t.Fatal(err)
		}
		for line, targets := range links(md) {
			for _, target := range targets {
				if schemeRE.MatchString(target) {
					continue
				}
				checked++
				file, frag, _ := strings.Cut(target, "#")
				dest := filepath.Join(repoRoot, filepath.FromSlash(filepath.Dir(page)), filepath.FromSlash(file))
				if file == "" {
					dest = filepath.Join(repoRoot, filepath.FromSlash(page))
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %s: %s does not exist", page, line, target, file)
					continue
				}
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				body, err := os.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				if !anchors(body)[frag] {
					t.Errorf("%s:%d: link %s: no heading #%s in %s", page, line, target, frag, file)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d links checked", checked)
	}
	t.Logf("%d links checked", checked)
}

// TestReadmeIsAFrontDoor: the README stays short, starts with the two
// commands, keeps its "A real deployment" section and links the site.
func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n >= 300 {
		t.Errorf("the README has %d lines; keep it under 300 and move the rest to docs/", n)
	}
	first := strings.Index(readme, "```sh\n")
	if first < 0 || !strings.HasPrefix(readme[first:], "```sh\nmake demo ") || !strings.Contains(readme[first:first+300], "\nmake test ") {
		t.Errorf("the README's first code block is not make demo and make test")
	}
	for _, want := range []string{"\n## A real deployment\n", "](docs/tour.md)", "](docs/deployment.md)", "make docs"} {
		if !strings.Contains(readme, want) {
			t.Errorf("the README lacks %q", want)
		}
	}
}

// TestSiteBuilds: `mkdocs build --strict` (what make docs runs) builds the
// site from docs/ with no warning (a link to a page that does not exist
// is one), and the site holds the pages and the editor schemas.
func TestSiteBuilds(t *testing.T) {
	mkdocs, err := exec.LookPath("mkdocs")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mkdocs is not installed (scripts/test-deps.sh installs it)")
		}
		t.Skip("needs mkdocs (apt-get install mkdocs, or scripts/test-deps.sh)")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mkdocs, "build", "--strict", "--site-dir", out)
	cmd.Dir = repoRoot
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mkdocs build --strict: %v\n%s", err, b)
	}
	for _, f := range []string{"index.html", "tour.html", "deployment.html", "modules.html", "editors.html", "schemas/scenario.schema.json", "screenshots/dashboard.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("the site lacks %s", f)
		}
	}
	tour, _ := os.ReadFile(filepath.Join(out, "tour.html"))
	if !bytes.Contains(tour, []byte(`href="https://github.com/soulstack/soulstack/blob/main/examples/hello"`)) {
		t.Error("a link out of docs/ (../examples/hello) was not pointed at the repository")
	}
}
