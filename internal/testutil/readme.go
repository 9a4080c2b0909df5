package testutil

import (
	"fmt"
	"os"
	"strings"
)

// ReadmeCommands returns the commands of the ```sh blocks of the markdown
// file path that lie between the lines holding begin and end (HTML comment
// markers, say), one slice per block: blank and comment-only lines are
// dropped and a line ending in a backslash is joined with the next. Tests
// run these commands, so the documentation cannot drift from what is
// tested.
func ReadmeCommands(path, begin, end string) ([][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	md := string(b)
	i := strings.Index(md, begin)
	if i < 0 {
		return nil, fmt.Errorf("%s has no %q marker", path, begin)
	}
	j := strings.Index(md[i:], end)
	if j < 0 {
		return nil, fmt.Errorf("%s has no %q marker after %q", path, end, begin)
	}
	var blocks [][]string
	var cur []string
	in, cont := false, ""
	for _, l := range strings.Split(md[i:i+j], "\n") {
		t := strings.TrimSpace(l)
		switch {
		case !in && t == "```sh":
			in, cur, cont = true, nil, ""
		case in && t == "```":
			in = false
			if cont != "" {
				return nil, fmt.Errorf("%s: a sh block ends in a backslash", path)
			}
			blocks = append(blocks, cur)
		case in && (t == "" || strings.HasPrefix(t, "#")) && cont == "":
		case in && strings.HasSuffix(t, `\`):
			cont += strings.TrimSpace(strings.TrimSuffix(t, `\`)) + " "
		case in:
			cur = append(cur, cont+t)
			cont = ""
		}
	}
	if in {
		return nil, fmt.Errorf("%s: a sh block between %q and %q is not closed", path, begin, end)
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%s has no sh block between %q and %q", path, begin, end)
	}
	return blocks, nil
}

// FindCommands returns the first block whose first command starts with
// prefix, or nil.
func FindCommands(blocks [][]string, prefix string) []string {
	for _, b := range blocks {
		if len(b) > 0 && strings.HasPrefix(b[0], prefix) {
			return b
		}
	}
	return nil
}
