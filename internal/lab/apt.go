package lab

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// aptSource is one "deb" entry of an apt sources list.
type aptSource struct {
	URI        string
	Suite      string
	Components []string
	SignedBy   string
}

// line renders s in the one-line sources.list format.
func (s aptSource) line() string {
	opts := ""
	if s.SignedBy != "" {
		opts = "[signed-by=" + s.SignedBy + "] "
	}
	return "deb " + opts + s.URI + " " + s.Suite + " " + strings.Join(s.Components, " ")
}

// readAptSources reads the deb entries of the apt sources under etcApt
// (normally /etc/apt), in both the one-line and the deb822 format.
func readAptSources(etcApt string) ([]aptSource, error) {
	files := []string{filepath.Join(etcApt, "sources.list")}
	for _, pattern := range []string{"*.list", "*.sources"} {
		m, err := filepath.Glob(filepath.Join(etcApt, "sources.list.d", pattern))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	var all []aptSource
	for _, f := range files {
		data, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading apt sources: %w", err)
		}
		if strings.HasSuffix(f, ".sources") {
			all = append(all, parseDeb822Sources(string(data))...)
		} else {
			all = append(all, parseOneLineSources(string(data))...)
		}
	}
	return all, nil
}

// parseOneLineSources parses "deb [opts] uri suite component…" lines.
func parseOneLineSources(data string) []aptSource {
	var out []aptSource
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		var signedBy string
		if strings.HasPrefix(f[0], "[") {
			// Options run up to the field that ends with ']'.
			i := 0
			for ; i < len(f); i++ {
				opt := strings.Trim(f[i], "[]")
				if v, ok := strings.CutPrefix(opt, "signed-by="); ok {
					signedBy = v
				}
				if strings.HasSuffix(f[i], "]") {
					break
				}
			}
			f = f[min(i+1, len(f)):]
		}
		if len(f) < 2 {
			continue
		}
		out = append(out, aptSource{URI: f[0], Suite: f[1], Components: f[2:], SignedBy: signedBy})
	}
	return out
}

// parseDeb822Sources parses the stanzas of a .sources file; a stanza with
// several URIs or suites yields one source for each pair.
func parseDeb822Sources(data string) []aptSource {
	var out []aptSource
	for _, stanza := range strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n\n") {
		fields := map[string]string{}
		var last string
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			if (line[0] == ' ' || line[0] == '\t') && last != "" {
				fields[last] += "\n" + strings.TrimSpace(line)
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
		if !slices.Contains(strings.Fields(fields["types"]), "deb") || strings.EqualFold(fields["enabled"], "no") {
			continue
		}
		signedBy := fields["signed-by"]
		if strings.Contains(signedBy, "\n") {
			// An inline key cannot be written into a one-line entry.
			signedBy = ""
		}
		for _, uri := range strings.Fields(fields["uris"]) {
			for _, s := range strings.Fields(fields["suites"]) {
				out = append(out, aptSource{URI: uri, Suite: s, Components: strings.Fields(fields["components"]), SignedBy: signedBy})
			}
		}
	}
	return out
}

// debianSources picks the entries of the Debian release (suite, its
// updates and its security suite) with the main component, and returns
// the release's entry, which debootstrap uses. A non-empty mirror replaces
// the archive of the release and its updates.
func debianSources(all []aptSource, mirror string) (archive aptSource, srcs []aptSource, err error) {
	wanted := []string{suite, suite + "-updates", suite + "-security"}
	seen := map[string]bool{}
	for _, s := range all {
		if !slices.Contains(wanted, s.Suite) || !slices.Contains(s.Components, "main") {
			continue
		}
		s.Components = []string{"main"}
		if mirror != "" && s.Suite != suite+"-security" {
			continue
		}
		if s.Suite == suite && archive.URI == "" {
			archive = s
		}
		if key := s.line(); !seen[key] {
			seen[key] = true
			srcs = append(srcs, s)
		}
	}
	if mirror != "" {
		archive = aptSource{URI: mirror, Suite: suite, Components: []string{"main"}}
		srcs = append([]aptSource{
			archive,
			{URI: mirror, Suite: suite + "-updates", Components: []string{"main"}},
		}, srcs...)
	}
	if archive.URI == "" {
		return aptSource{}, nil, fmt.Errorf("no apt source for Debian %s main on this machine: set %s to a Debian archive URL", suite, EnvMirror)
	}
	return archive, srcs, nil
}

// aptConfig writes an apt configuration under dir that ignores the
// machine's apt configuration and state: its own sources, lists, cache and
// a copy of the base's dpkg status, so that apt resolves what installing
// packages into the base needs and downloads it into debs.
func aptConfig(dir, status, debs string, srcs []aptSource) (string, error) {
	empty := filepath.Join(dir, "empty")
	for _, d := range []string{empty, filepath.Join(dir, "lists", "partial"), filepath.Join(dir, "cache"),
		filepath.Join(dir, "state"), filepath.Join(debs, "partial")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("apt config: %w", err)
		}
	}
	var list strings.Builder
	for _, s := range srcs {
		list.WriteString(s.line() + "\n")
	}
	sourceList := filepath.Join(dir, "sources.list")
	if err := os.WriteFile(sourceList, []byte(list.String()), 0o644); err != nil {
		return "", fmt.Errorf("apt config: %w", err)
	}
	conf := fmt.Sprintf(`Dir::Etc::Main "/dev/null";
Dir::Etc::Parts %[1]q;
Dir::Etc::SourceList %[2]q;
Dir::Etc::SourceParts %[1]q;
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts %[1]q;
Dir::State %[3]q;
Dir::State::Lists %[4]q;
Dir::State::status %[5]q;
Dir::Cache %[6]q;
Dir::Cache::archives %[7]q;
APT::Install-Recommends "false";
APT::Install-Suggests "false";
APT::Sandbox::User "root";
Acquire::Languages "none";
`, empty, sourceList, filepath.Join(dir, "state"), filepath.Join(dir, "lists"), status,
		filepath.Join(dir, "cache"), debs)
	path := filepath.Join(dir, "apt.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return "", fmt.Errorf("apt config: %w", err)
	}
	return path, nil
}
