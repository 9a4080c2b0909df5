package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager

	"github.com/soulstack/soulstack/packaging"
)

// Package names.
const (
	PkgKeeper  = "soulstack-keeper"
	PkgSoul    = "soulstack-soul"
	PkgSoulctl = "soulctl"
)

// Where the packages put things.
const (
	unitDir = "/usr/lib/systemd/system"
	// SoulLibDir is where the keeper package puts the soul binaries the
	// Keeper serves (soul-linux-<arch>).
	SoulLibDir = "/usr/lib/soulstack"
)

// PackageOptions says what BuildPackages builds.
type PackageOptions struct {
	// Version is the release (v1.2.3, or what scripts/version.sh prints).
	Version string
	// Arch is the Go architecture of the binaries: amd64 or arm64.
	Arch string
	// BinDir holds keeper, soul and soulctl built for linux/Arch (static).
	BinDir string
	// SoulBinaries maps a Go architecture to a soul binary that the keeper
	// package ships as SoulLibDir/soul-linux-<arch>, for GET
	// /v1/soul/binary; nil ships BinDir's soul alone.
	SoulBinaries map[string]string
	// LicenseFile is the LICENSE text shipped in every .rpm (the .deb
	// packages point at /usr/share/common-licenses instead).
	LicenseFile string
	// Changelog is CHANGELOG.md (Keep a Changelog): the packages'
	// changelog.Debian and %changelog are made from it. Empty means none.
	Changelog string
	// OutDir receives the packages.
	OutDir string
	// Formats are "deb" and/or "rpm"; nil means both.
	Formats []string
	// Packages are some of PkgKeeper, PkgSoul, PkgSoulctl; nil means all.
	Packages []string
}

// BuildPackages builds the .deb and .rpm packages of the keeper, the soul
// and soulctl with nfpm and returns their paths.
func BuildPackages(o PackageOptions) ([]string, error) {
	if o.Arch != "amd64" && o.Arch != "arm64" {
		return nil, fmt.Errorf("building packages: arch %q: want amd64 or arm64", o.Arch)
	}
	if o.Formats == nil {
		o.Formats = []string{"deb", "rpm"}
	}
	if o.Packages == nil {
		o.Packages = []string{PkgKeeper, PkgSoul, PkgSoulctl}
	}
	if o.SoulBinaries == nil {
		o.SoulBinaries = map[string]string{o.Arch: filepath.Join(o.BinDir, "soul")}
	}
	tmp, err := os.MkdirTemp("", "soulstack-pkg-")
	if err != nil {
		return nil, fmt.Errorf("building packages: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := unpackPackaging(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("building packages: %w", err)
	}
	var rels []Release
	if o.Changelog != "" {
		b, err := os.ReadFile(o.Changelog)
		if err != nil {
			return nil, fmt.Errorf("building packages: %w", err)
		}
		if rels, err = ParseChangelog(b); err != nil {
			return nil, fmt.Errorf("building packages: %s: %w", o.Changelog, err)
		}
	}
	var out []string
	for _, name := range o.Packages {
		for _, format := range o.Formats {
			info, err := packageInfo(name, o, tmp)
			if err != nil {
				return nil, err
			}
			p, err := buildOne(info, format, o.OutDir, tmp, o.Version, rels)
			if err != nil {
				return nil, fmt.Errorf("building %s %s: %w", name, format, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// unpackPackaging writes the embedded packaging files into dir, the units
// rewritten for /usr/bin and named after their packages.
func unpackPackaging(dir string) error {
	return fs.WalkDir(packaging.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := packaging.Files.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, p)
		if strings.HasPrefix(p, "man/") {
			if b, err = gzipMax(b); err != nil {
				return err
			}
			dst += ".gz"
		}
		if strings.HasSuffix(p, ".service") {
			b = []byte(strings.ReplaceAll(string(b), "/usr/local/bin/", "/usr/bin/"))
			b = []byte(strings.ReplaceAll(string(b), "systemctl enable --now soul\n", "systemctl enable --now soulstack-soul\n"))
			dst = filepath.Join(dir, "soulstack-"+p)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

func packageInfo(name string, o PackageOptions, tmp string) (*nfpm.Info, error) {
	script := func(s string) string { return filepath.Join(tmp, "scripts", s) }
	file := func(src, dst string, mode fs.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode}}
	}
	info := &nfpm.Info{
		Name:       name,
		Arch:       o.Arch,
		Platform:   "linux",
		Version:    o.Version,
		Maintainer: "Soul Stack <soulstack@example.org>",
		Vendor:     "Soul Stack",
		Homepage:   "https://github.com/soulstack/soulstack",
		License:    "Apache-2.0",
		Section:    "admin",
		Priority:   "optional",
	}
	// Non-native: the packaging is not the upstream source, so lintian
	// looks for changelog.Debian (nfpm's name); rpm's Release is 1 too.
	info.Release = "1"
	doc := "/usr/share/doc/" + name
	cp := filepath.Join(tmp, "copyright")
	if err := os.WriteFile(cp, []byte(copyrightText), 0o644); err != nil {
		return nil, err
	}
	info.Contents = append(info.Contents, &files.Content{Source: cp, Destination: doc + "/copyright", Packager: "deb", FileInfo: &files.ContentFileInfo{Mode: 0o644}})
	if o.LicenseFile != "" {
		info.Contents = append(info.Contents, &files.Content{Source: o.LicenseFile, Destination: "/usr/share/licenses/" + name + "/LICENSE", Type: files.TypeRPMLicense, Packager: "rpm", FileInfo: &files.ContentFileInfo{Mode: 0o644}})
	}
	arches := make([]string, 0, len(o.SoulBinaries))
	for a := range o.SoulBinaries {
		arches = append(arches, a)
	}
	slices.Sort(arches)
	ov := filepath.Join(tmp, "lintian-"+name)
	if err := os.WriteFile(ov, []byte(lintianOverrides(name, arches)), 0o644); err != nil {
		return nil, err
	}
	info.Contents = append(info.Contents, &files.Content{Source: ov, Destination: "/usr/share/lintian/overrides/" + name, Packager: "deb", FileInfo: &files.ContentFileInfo{Mode: 0o644}})
	// The man pages and completion scripts of the package's binary
	// (packaging/man, packaging/completion: internal/manpages).
	docs := func(bin, section string) error {
		pages, err := filepath.Glob(filepath.Join(tmp, "man", bin+"*."+section+".gz"))
		if err != nil {
			return err
		}
		for _, pg := range pages {
			base := filepath.Base(pg)
			if base != bin+"."+section+".gz" && !strings.HasPrefix(base, bin+"-") {
				continue // soul's pages are not soulctl's
			}
			// %doc in the .rpm (rpmlint: not-listed-as-documentation); a
			// plain file in the .deb, where nfpm drops doc-typed files.
			dst := "/usr/share/man/man" + section + "/" + base
			info.Contents = append(info.Contents,
				&files.Content{Source: pg, Destination: dst, Packager: "deb", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
				&files.Content{Source: pg, Destination: dst, Type: files.TypeRPMDoc, Packager: "rpm", FileInfo: &files.ContentFileInfo{Mode: 0o644}})
		}
		if len(pages) == 0 {
			return fmt.Errorf("building %s: no man pages of %s in packaging/man", name, bin)
		}
		comp := filepath.Join(tmp, "completion")
		info.Contents = append(info.Contents,
			file(filepath.Join(comp, "bash", bin), "/usr/share/bash-completion/completions/"+bin, 0o644),
			&files.Content{Source: filepath.Join(comp, "zsh", "_"+bin), Destination: "/usr/share/zsh/vendor-completions/_" + bin, Packager: "deb", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			&files.Content{Source: filepath.Join(comp, "zsh", "_"+bin), Destination: "/usr/share/zsh/site-functions/_" + bin, Packager: "rpm", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
			file(filepath.Join(comp, "fish", bin+".fish"), "/usr/share/fish/vendor_completions.d/"+bin+".fish", 0o644),
		)
		return nil
	}
	bin := func(n string) (string, error) {
		p := filepath.Join(o.BinDir, n)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("building %s: %w (build it first: make dist)", name, err)
		}
		return p, nil
	}
	switch name {
	case PkgSoul:
		info.RPM.Group = "System Environment/Daemons"
		info.Description = `Agent that runs a Soul Stack Keeper's work on this host
The soul is the agent of Soul Stack, a configuration management and
orchestration system. It dials out to its Keeper, pins the Keeper's
certificate, and runs the idempotent modules (packages, files, services,
users, ...) the Keeper's runs send it, reporting each result back.
.
It runs as root: its modules install packages and manage system files and
services. Set SOULSTACK_KEEPER and SOUL_JOIN_TOKEN in
/etc/soulstack/soul.env, then enable soulstack-soul.service.`
		if err := docs("soul", "8"); err != nil {
			return nil, err
		}
		p, err := bin("soul")
		if err != nil {
			return nil, err
		}
		info.Contents = append(info.Contents,
			file(p, "/usr/bin/soul", 0o755),
			file(filepath.Join(tmp, "soulstack-soul.service"), unitDir+"/soulstack-soul.service", 0o644),
			&files.Content{Source: filepath.Join(tmp, "soul.env"), Destination: "/etc/soulstack/soul.env", Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o600}},
		)
		info.Scripts = nfpm.Scripts{PostInstall: script("soul-postinstall.sh"), PreRemove: script("soul-preremove.sh"), PostRemove: script("soul-postremove.sh")}
	case PkgKeeper:
		info.RPM.Group = "System Environment/Daemons"
		info.Description = `Soul Stack server: Operator API, web UI, run engine and soul gateway
The Keeper is the server of Soul Stack, a configuration management and
orchestration system. It holds the service repositories and their
incarnations, runs scenarios across the souls (agents) connected to it,
records state and history in SQLite or PostgreSQL, and runs the Checker's
procedures. It serves the soul binary to new hosts.
.
It runs unprivileged as the soulstack user in a sandboxed unit. Initialize
it once with "keeper init", then enable soulstack-keeper.service.`
		if err := docs("keeper", "1"); err != nil {
			return nil, err
		}
		p, err := bin("keeper")
		if err != nil {
			return nil, err
		}
		info.Contents = append(info.Contents,
			file(p, "/usr/bin/keeper", 0o755),
			file(filepath.Join(tmp, "soulstack-keeper.service"), unitDir+"/soulstack-keeper.service", 0o644),
			&files.Content{Source: filepath.Join(tmp, "keeper.yaml"), Destination: "/etc/soulstack/keeper.yaml", Type: files.TypeConfigNoReplace,
				FileInfo: &files.ContentFileInfo{Mode: 0o640, Owner: "root", Group: "soulstack"}},
		)
		for _, a := range arches {
			info.Contents = append(info.Contents, file(o.SoulBinaries[a], SoulLibDir+"/soul-linux-"+a, 0o755))
		}
		info.Scripts = nfpm.Scripts{PreInstall: script("keeper-preinstall.sh"), PostInstall: script("keeper-postinstall.sh"),
			PreRemove: script("keeper-preremove.sh"), PostRemove: script("keeper-postremove.sh")}
	case PkgSoulctl:
		info.RPM.Group = "Applications/System"
		info.Description = `Command line client of the Soul Stack configuration system
soulctl drives a Soul Stack Keeper through its Operator API: services,
incarnations and their runs, souls, tokens and the audit log. It also works
on service repositories offline: it validates them and runs their scenario
tests, and imports Ansible roles.`
		if err := docs("soulctl", "1"); err != nil {
			return nil, err
		}
		p, err := bin("soulctl")
		if err != nil {
			return nil, err
		}
		info.Contents = append(info.Contents, file(p, "/usr/bin/soulctl", 0o755))
	default:
		return nil, fmt.Errorf("unknown package %q: want %s, %s or %s", name, PkgKeeper, PkgSoul, PkgSoulctl)
	}
	return info, nil
}

func buildOne(info *nfpm.Info, format, outDir, tmp, upstream string, rels []Release) (string, error) {
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	info = nfpm.WithDefaults(info)
	if rels != nil {
		v := debVersion(info.Version, info.Prerelease, info.VersionMetadata, info.Release)
		if format == "rpm" {
			// rpm spells a prerelease with _ for - (nfpm's formatVersion):
			// rpmlint wants the newest entry to name the package's EVR.
			v = debVersion(info.Version, strings.ReplaceAll(info.Prerelease, "-", "_"), info.VersionMetadata, info.Release)
		}
		entries := changelogEntries(v, upstream, rels, time.Now().UTC())
		switch format {
		case "rpm":
			info.Changelog = filepath.Join(tmp, "changelog-"+info.Name+".yml")
			if err := writeChglog(info.Changelog, info.Maintainer, entries); err != nil {
				return "", err
			}
		case "deb":
			// Written here rather than by nfpm (whose template cannot wrap
			// long items, which lintian flags).
			b, err := debianChangelog(info.Name, info.Maintainer, entries)
			if err != nil {
				return "", err
			}
			p := filepath.Join(tmp, "changelog.Debian-"+info.Name+".gz")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return "", err
			}
			c := *info
			c.Contents = append(slices.Clone(info.Contents), &files.Content{Source: p, Destination: "/usr/share/doc/" + info.Name + "/changelog.Debian.gz", FileInfo: &files.ContentFileInfo{Mode: 0o644}})
			info = &c
		}
	}
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	path := filepath.Join(outDir, pkgr.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := pkgr.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", errors.Join(err, os.Remove(path))
	}
	return path, nil
}
