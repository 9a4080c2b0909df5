// Command mkpackage builds the .deb and .rpm packages from `make dist`'s
// binaries (`make package` runs it):
//
//	go run ./internal/install/mkpackage -version v1.2.3 -dist dist -arch amd64,arm64
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/soulstack/soulstack/internal/install"
)

func main() {
	version := flag.String("version", "", "package version (scripts/version.sh)")
	dist := flag.String("dist", "dist", "make dist's output: linux-<arch>/{keeper,soul,soulctl}; packages go there too")
	arches := flag.String("arch", "amd64,arm64", "architectures to package")
	formats := flag.String("format", "deb,rpm", "package formats")
	license := flag.String("license", "LICENSE", "license file shipped in the .rpm packages")
	changelog := flag.String("changelog", "CHANGELOG.md", "Keep a Changelog file the packages' changelogs are made from")
	pkgs := flag.String("packages", "", "packages to build (comma-separated; default all)")
	flag.Parse()
	if *version == "" {
		fmt.Fprintln(os.Stderr, "mkpackage: -version is required")
		os.Exit(2)
	}
	var packages []string
	if *pkgs != "" {
		packages = strings.Split(*pkgs, ",")
	}
	souls := map[string]string{}
	for _, a := range strings.Split(*arches, ",") {
		souls[a] = filepath.Join(*dist, "linux-"+a, "soul")
	}
	for _, a := range strings.Split(*arches, ",") {
		paths, err := install.BuildPackages(install.PackageOptions{
			Version: *version, Arch: a, BinDir: filepath.Join(*dist, "linux-"+a), SoulBinaries: souls,
			LicenseFile: *license, Changelog: *changelog, OutDir: *dist, Formats: strings.Split(*formats, ","),
			Packages: packages,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkpackage:", err)
			os.Exit(1)
		}
		for _, p := range paths {
			fmt.Println(p)
		}
	}
}
