// Command mkrepo writes a signed apt repository of `make package`'s .deb
// files (`make repo` runs it):
//
//	go run ./internal/install/mkrepo -dist dist -out dist/apt -key signing-key.asc
//
// The key is an armored, unprotected OpenPGP secret key, e.g.
// gpg --export-secret-keys --armor KEYID > signing-key.asc.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/soulstack/soulstack/internal/install"
)

func main() {
	dist := flag.String("dist", "dist", "directory holding the .deb packages (make package)")
	out := flag.String("out", "dist/apt", "directory the repository is written into")
	key := flag.String("key", "", "armored OpenPGP secret key that signs Release (required)")
	suite := flag.String("suite", "stable", "distribution name in apt sources")
	flag.Parse()
	if *key == "" {
		fmt.Fprintln(os.Stderr, "mkrepo: -key is required: an armored OpenPGP secret key (gpg --export-secret-keys --armor KEYID > key.asc; make repo REPO_KEY=key.asc)")
		os.Exit(2)
	}
	k, err := os.ReadFile(*key)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkrepo:", err)
		os.Exit(1)
	}
	debs, err := filepath.Glob(filepath.Join(*dist, "*.deb"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkrepo:", err)
		os.Exit(1)
	}
	if err := install.BuildAptRepo(install.AptRepoOptions{Debs: debs, Dir: *out, Suite: *suite, SigningKey: k}); err != nil {
		fmt.Fprintln(os.Stderr, "mkrepo:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d packages; apt source: deb [signed-by=/etc/apt/keyrings/%s] <URL of %s> %s main\n", *out, len(debs), install.KeyFileName, *out, *suite)
}
