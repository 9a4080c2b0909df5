// Command genmodref writes the module reference (docs/modules.md) from the
// modules' schemas: go run ./internal/cli/genmodref docs/modules.md (or
// go generate ./internal/cli).
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/soulstack/soulstack/internal/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genmodref FILE")
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
}
