// Package version is the build's identity: the version and commit stamped
// into every binary at build time (`make build`, `make dist` pass them with
// -ldflags -X, from scripts/version.sh, that is `git describe`), and the
// rule deciding which souls a Keeper can speak to.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// These are set by the linker: -ldflags "-X
// github.com/soulstack/soulstack/internal/version.version=v1.2.3 -X
// ….commit=<sha>". They are the one piece of package state: constants of
// the build, never written at run time.
var (
	version = ""
	commit  = ""
)

// Untagged is the version prefix of a build from a tree without a release
// tag (scripts/version.sh and the go build fallback both use it).
const Untagged = "v0.0.0-untagged"

// Info is what a binary knows about its own build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// Get returns this binary's build info. Without -ldflags (go build, go
// test, go run) the version is Untagged plus the VCS revision the Go
// toolchain recorded, "-dirty" when the tree had changes.
func Get() Info {
	i := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if i.Version != "" && i.Commit != "" {
		return i
	}
	rev, dirty := "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if i.Commit == "" {
		i.Commit = rev
	}
	if i.Version == "" {
		i.Version = Untagged
		if rev != "" {
			i.Version += "-" + short(rev)
		}
		if dirty {
			i.Version += "-dirty"
		}
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	return i
}

// Version is Get().Version.
func Version() string { return Get().Version }

// String is the one-line form printed by --version.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, short(i.Commit), i.GoVersion, i.Platform)
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// Semver is a parsed vMAJOR.MINOR.PATCH prefix of a version.
type Semver struct{ Major, Minor, Patch int }

// Parse reads the vMAJOR.MINOR.PATCH at the start of v (what `git describe`
// prints after a release tag, followed by "-N-gSHA" or "-dirty"). ok is
// false for anything else, an untagged build included.
func Parse(v string) (s Semver, ok bool) {
	if !strings.HasPrefix(v, "v") || strings.HasPrefix(v, Untagged) {
		return Semver{}, false
	}
	core := v[1:]
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return Semver{}, false
	}
	var n [3]int
	for k, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return Semver{}, false
		}
		n[k] = x
	}
	return Semver{n[0], n[1], n[2]}, true
}

// Compatible says whether a Keeper of version keeper speaks the soul
// stream of a soul of version soul. The rule: the same release line (the
// same major version; for 0.x the same minor) and a soul of no newer minor
// release than its Keeper — upgrade Keepers first, then souls; patch
// releases never change the protocol. A soul that sends no version
// or an untagged (development) build on either side is accepted: there is
// no release line to compare. reason says what to do when it is false.
func Compatible(keeper, soul string) (ok bool, reason string) {
	if soul == "" {
		return true, ""
	}
	k, kok := Parse(keeper)
	s, sok := Parse(soul)
	if !kok || !sok {
		return true, ""
	}
	sameLine := k.Major == s.Major && (k.Major > 0 || k.Minor == s.Minor)
	if !sameLine {
		return false, fmt.Sprintf("soul version %s cannot speak to keeper version %s (another release line): install the soul of the keeper's version (GET /v1/soul/binary, or the soulstack-soul package %s)", soul, keeper, keeper)
	}
	if s.Minor > k.Minor {
		return false, fmt.Sprintf("soul version %s is newer than keeper version %s: upgrade the keeper first, or install the soul of the keeper's version", soul, keeper)
	}
	return true, ""
}
