package install

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/goreleaser/chglog"
	"go.yaml.in/yaml/v3"
)

// Release is one version section of CHANGELOG.md (Keep a Changelog).
type Release struct {
	Version string // "0.4.0", or "Unreleased"
	Date    time.Time
	Notes   []string // the section's items, "Added: …"
}

var releaseHead = regexp.MustCompile(`^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?`)

// ParseChangelog reads the releases of a Keep a Changelog file, newest
// first, each item prefixed with its kind (Added, Changed, Fixed, …).
func ParseChangelog(md []byte) ([]Release, error) {
	var out []Release
	kind := ""
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		l := sc.Text()
		if m := releaseHead.FindStringSubmatch(l); m != nil {
			r := Release{Version: m[1]}
			if m[2] != "" {
				d, err := time.Parse("2006-01-02", m[2])
				if err != nil {
					return nil, fmt.Errorf("changelog: %q: %w", l, err)
				}
				r.Date = d
			} else if m[1] != "Unreleased" {
				return nil, fmt.Errorf("changelog: release %s has no date", m[1])
			}
			out = append(out, r)
			kind = ""
			continue
		}
		if len(out) == 0 {
			continue
		}
		r := &out[len(out)-1]
		switch {
		case strings.HasPrefix(l, "### "):
			kind = strings.TrimSpace(l[4:])
		case strings.HasPrefix(l, "- "):
			r.Notes = append(r.Notes, kind+": "+strings.TrimSpace(l[2:]))
		case strings.HasPrefix(l, "  ") && strings.TrimSpace(l) != "" && len(r.Notes) > 0:
			r.Notes[len(r.Notes)-1] += " " + strings.TrimSpace(l)
		}
	}
	return out, sc.Err()
}

// debVersion is the version string dpkg and rpm show for info, after
// nfpm.WithDefaults split it into its parts.
func debVersion(v, prerelease, metadata, release string) string {
	if prerelease != "" {
		v += "~" + prerelease
	}
	if metadata != "" {
		v += "+" + metadata
	}
	if release != "" {
		v += "-" + release
	}
	return v
}

// changelogEntries are the package changelog's entries at version (the
// package version; upstream is the release being built) from
// CHANGELOG.md's releases: the entry of the release being built (the
// Unreleased section's notes for a build between tags, dated now), then
// every older release, newest first.
func changelogEntries(version, upstream string, rels []Release, now time.Time) []Release {
	upstream = strings.TrimPrefix(upstream, "v")
	cur := -1
	for i, r := range rels {
		if r.Version == upstream {
			cur = i
		}
	}
	var out []Release
	if cur < 0 {
		r := Release{Version: version, Date: now, Notes: []string{"Development build " + upstream + " (see CHANGELOG.md)."}}
		if len(rels) > 0 && rels[0].Version == "Unreleased" && len(rels[0].Notes) > 0 {
			r.Notes = rels[0].Notes
		}
		out = append(out, r)
	}
	for i, r := range rels {
		if r.Version == "Unreleased" || (cur >= 0 && i < cur) {
			continue
		}
		r.Version += "-1"
		if i == cur {
			r.Version = version
		}
		if len(r.Notes) == 0 {
			r.Notes = []string{"Release " + r.Version + "."}
		}
		out = append(out, r)
	}
	return out
}

// writeChglog writes entries as the nfpm (chglog) changelog that becomes
// the .rpm's %changelog.
func writeChglog(path, maintainer string, entries []Release) error {
	var out chglog.ChangeLogEntries
	for _, r := range entries {
		e := &chglog.ChangeLog{Semver: r.Version, Date: r.Date, Packager: maintainer}
		for _, n := range r.Notes {
			e.Changes = append(e.Changes, &chglog.ChangeLogChange{Note: n})
		}
		out = append(out, e)
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// debianChangelog renders entries in the format of debian/changelog
// (Debian Policy 4.4), items wrapped to 80 columns, gzip -9n.
func debianChangelog(name, maintainer string, entries []Release) ([]byte, error) {
	var b strings.Builder
	for i, r := range entries {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s (%s) stable; urgency=medium\n\n", name, r.Version)
		for _, n := range r.Notes {
			line := "  *"
			for _, w := range strings.Fields(n) {
				if len(line)+1+len(w) > 78 {
					b.WriteString(line + "\n")
					line = "   "
				}
				line += " " + w
			}
			b.WriteString(line + "\n")
		}
		fmt.Fprintf(&b, "\n -- %s  %s\n", maintainer, r.Date.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	}
	return gzipMax([]byte(b.String()))
}

// copyrightText is the machine-readable debian/copyright of every package:
// Debian systems carry the Apache license in /usr/share/common-licenses.
const copyrightText = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: soulstack
Upstream-Contact: Soul Stack <soulstack@example.org>
Source: https://github.com/soulstack/soulstack

Files: *
Copyright: 2026 The Soul Stack authors
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
 https://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
`

// lintianOverrides are the lintian tags each .deb overrides, each with its
// reason (shipped as /usr/share/lintian/overrides/<package>). Everything
// else lintian reports is fixed, not overridden.
func lintianOverrides(name string, soulArches []string) string {
	var b strings.Builder
	static := func(path string) {
		fmt.Fprintf(&b, "# Static on purpose (CGO_ENABLED=0): the same binary runs on any\n# x86-64/arm64 Linux whatever its libc, and the Keeper hands it to hosts\n# that have no package manager (install.sh, souls bootstrap).\n%s: statically-linked-binary [%s]\n", name, path)
	}
	systemctl := func() {
		fmt.Fprintf(&b, "# The maintainer scripts are shared with the .rpm, where\n# deb-systemd-helper/invoke-rc.d do not exist; they call systemctl only when\n# systemd runs (/run/systemd/system) and never fail on it.\n%s: maintainer-script-calls-systemctl *\n", name)
	}
	switch name {
	case PkgSoul:
		static("usr/bin/soul")
		systemctl()
		fmt.Fprintf(&b, "# Holds the join token (a secret) once the administrator fills it in.\n%s: non-standard-file-perm 0600 != 0644 [etc/soulstack/soul.env]\n", name)
	case PkgKeeper:
		static("usr/bin/keeper")
		for _, a := range soulArches {
			static(SoulLibDir[1:] + "/soul-linux-" + a)
		}
		if len(soulArches) > 1 {
			fmt.Fprintf(&b, "# The Keeper serves the soul binary of every architecture to its hosts\n# (GET /v1/soul/binary); they are data to it, never executed here.\n%s: binary-from-other-architecture *\n", name)
		}
		systemctl()
		fmt.Fprintf(&b, "# May hold the database URL with its password: readable by the Keeper's\n# group only.\n%s: non-standard-file-perm 0640 != 0644 [etc/soulstack/keeper.yaml]\n", name)
	case PkgSoulctl:
		static("usr/bin/soulctl")
	}
	return b.String()
}

// gzipMax compresses b the way lintian wants man pages: gzip -9n (maximum
// compression, no name or time stamp).
func gzipMax(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
