package labtest

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/packaging"
)

// unitRuntime are the [Service] keys of packaging/soul.service that say how
// the soul runs as a daemon (what it starts, how it stops and restarts);
// every other key is a sandboxing option SoulSandbox carries over.
var unitRuntime = map[string]bool{
	"Type": true, "EnvironmentFile": true, "ExecStart": true, "KillSignal": true,
	"KillMode": true, "TimeoutStopSec": true, "Restart": true, "RestartSec": true,
}

// SoulSandbox returns argv run through systemd-run as a transient service
// with the sandboxing options of the packaged soul unit
// (packaging/soul.service), so that what a test runs as root works, or
// fails, as it would under the installed soul. The host must boot systemd.
func SoulSandbox(argv ...string) ([]string, error) {
	props, err := SoulUnitSandbox()
	if err != nil {
		return nil, err
	}
	out := []string{"systemd-run", "--quiet", "--wait", "--pipe", "--collect", "--service-type=exec"}
	for _, p := range props {
		out = append(out, "-p", p)
	}
	return append(append(out, "--"), argv...), nil
}

// SoulUnitSandbox returns the sandboxing lines (Key=value) of the
// [Service] section of packaging/soul.service, in order.
func SoulUnitSandbox() ([]string, error) {
	b, err := packaging.Files.ReadFile("soul.service")
	if err != nil {
		return nil, err
	}
	var props []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "["):
			section = l
		case section == "[Service]":
			k, _, ok := strings.Cut(l, "=")
			if !ok {
				return nil, fmt.Errorf("packaging/soul.service: %q is not Key=value", l)
			}
			if !unitRuntime[k] {
				props = append(props, l)
			}
		}
	}
	if len(props) == 0 {
		return nil, fmt.Errorf("packaging/soul.service has no sandboxing options")
	}
	return props, sc.Err()
}
