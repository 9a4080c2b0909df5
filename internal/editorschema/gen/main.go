// Command gen writes the editor schemas into a directory: go run
// ./internal/editorschema/gen docs/schemas (or go generate
// ./internal/editorschema).
package main

import (
	"fmt"
	"os"

	"github.com/soulstack/soulstack/internal/editorschema"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	if err := editorschema.Write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
