// Command genman regenerates packaging/man and packaging/completion from
// the command trees (run it from the repository root):
//
//	go run ./internal/manpages/genman
package main

import (
	"fmt"
	"os"

	"github.com/soulstack/soulstack/internal/manpages"
)

func main() {
	dir := "packaging"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := manpages.Write(dir); err != nil {
		fmt.Fprintln(os.Stderr, "genman:", err)
		os.Exit(1)
	}
}
