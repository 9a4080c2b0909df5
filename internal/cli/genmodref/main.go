// Command genmodref writes the module reference (docs/modules.md) and the
// module table of the tour from the modules' schemas: go run
// ./internal/cli/genmodref docs/modules.md docs/tour.md (or go generate
// ./internal/cli).
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/soulstack/soulstack/internal/cli"
)

func main() {
	if len(os.Args) != 2 && len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: genmodref MODULES.md [TABLE-PAGE.md]")
		os.Exit(2)
	}
	var b bytes.Buffer
	if err := cli.WriteModuleReference(&b); err != nil {
		fmt.Fprintln(os.Stderr, "genmodref:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genmodref:", err)
		os.Exit(1)
	}
	if len(os.Args) == 3 {
		if err := readmeTable(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "genmodref:", err)
			os.Exit(1)
		}
	}
}

// readmeTable rewrites the module table region of the page at path.
func readmeTable(path string) error {
	readme, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var table bytes.Buffer
	if err := cli.WriteModuleTable(&table); err != nil {
		return err
	}
	out, err := cli.ReplaceModuleTable(readme, table.Bytes())
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
