package custom

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/module"
)

const markerSpec = `summary: Keep a marker file with a given text
check_mode: true
timeout: 5s
params:
  path: {type: string, required: true, description: the file}
  text: {type: string, default: hello}
  count: {type: integer, default: 1}
output:
  previous: {type: string, description: what the file held before}
`

// markerProgram converges a file to text×count, honouring check mode.
const markerProgram = `#!/bin/sh
req=$(cat)
path=$(printf '%s' "$req" | sed -n 's/.*"path":"\([^"]*\)".*/\1/p')
text=$(printf '%s' "$req" | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')
check=$(printf '%s' "$req" | sed -n 's/.*"check":\(true\|false\).*/\1/p')
prev=$(cat "$path" 2>/dev/null)
if [ "$prev" = "$text" ]; then
  printf '{"changed":false,"msg":"ok","output":{"previous":"%s"}}' "$prev"
  exit 0
fi
[ "$check" = true ] || printf '%s' "$text" > "$path"
printf '{"changed":true,"diff":"-%s\\n+%s\\n","output":{"previous":"%s"}}' "$prev" "$text" "$prev"
`

func newModule(t *testing.T, spec, program string) *Module {
	t.Helper()
	m, ps := New("marker", []byte(spec), []byte(program))
	if len(ps) > 0 {
		t.Fatalf("spec problems: %v", ps)
	}
	return m
}

func TestApplyConvergesAndHonoursCheckMode(t *testing.T) {
	m := newModule(t, markerSpec, markerProgram)
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "marker")
	params := map[string]any{"path": p, "text": "soul"}

	r, err := m.Apply(ctx, params, &module.Env{Check: true})
	if err != nil || !r.Changed || r.Failed || !strings.Contains(r.Diff, "+soul") {
		t.Fatalf("check: %+v, %v", r, err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("check mode wrote the file: %v", err)
	}
	r, err = m.Apply(ctx, params, &module.Env{})
	if err != nil || !r.Changed || r.Failed {
		t.Fatalf("apply: %+v, %v", r, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "soul" {
		t.Fatalf("file holds %q", b)
	}
	r, err = m.Apply(ctx, params, &module.Env{})
	if err != nil || r.Changed || r.Failed || r.Data["previous"] != "soul" {
		t.Fatalf("second apply: %+v, %v", r, err)
	}
}

func TestApplyFaults(t *testing.T) {
	ctx := context.Background()
	base := "summary: s\ncheck_mode: true\nparams:\n  n: {type: integer}\noutput:\n  x: {type: integer}\n"
	cases := []struct {
		name, spec, program string
		params              map[string]any
		want                []string
	}{
		{"non-JSON", base, "#!/bin/sh\necho hello world\n", nil,
			[]string{"service.marker on ", "no valid JSON result", `"hello world"`}},
		{"non-JSON and exit 3", base, "#!/bin/sh\necho oops >&2\nexit 3\n", nil,
			[]string{"exited with status 3", "stderr: oops"}},
		{"two JSON values", base, "#!/bin/sh\necho '{}{}'\n", nil, []string{"more than one JSON value"}},
		{"unknown result key", base, "#!/bin/sh\necho '{\"chnaged\":true}'\n", nil, []string{`unknown field "chnaged"`}},
		{"undeclared output", base, "#!/bin/sh\necho '{\"output\":{\"y\":1}}'\n", nil, []string{`output field "y"`, "does not declare"}},
		{"wrong output type", base, "#!/bin/sh\necho '{\"output\":{\"x\":\"a\"}}'\n", nil, []string{`output field "x" of the wrong type`, "integer"}},
		{"output bound", base + "max_output: 100\n", "#!/bin/sh\nhead -c 5000 /dev/zero | tr '\\0' a\n", nil,
			[]string{"more than 100 bytes on stdout", "max_output"}},
		{"timeout", base + "timeout: 300ms\n", "#!/bin/sh\nsleep 30\n", nil, []string{"timed out after 300ms"}},
		{"missing interpreter", base, "#!/nonexistent/python9\nprint(1)\n", nil, []string{"cannot start modules/marker/run", "interpreter"}},
		{"wrong param type", base, "#!/bin/sh\necho '{}'\n", map[string]any{"n": "three"}, []string{`param "n" must be integer`}},
		{"unknown param", base, "#!/bin/sh\necho '{}'\n", map[string]any{"m": 1}, []string{`unknown param "m"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newModule(t, c.spec, c.program)
			start := time.Now()
			r, err := m.Apply(ctx, c.params, &module.Env{})
			if err == nil {
				t.Fatalf("no error: %+v", r)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "service.marker on ") {
				t.Errorf("error %q does not name the module and host first", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestApplyReportsFailureAndExitStatus(t *testing.T) {
	m := newModule(t, "summary: s\n", "#!/bin/sh\necho '{\"failed\":true,\"msg\":\"disk full\"}'\n")
	r, err := m.Apply(context.Background(), nil, &module.Env{})
	if err != nil || !r.Failed || r.Msg != "disk full" {
		t.Fatalf("%+v, %v", r, err)
	}
	m = newModule(t, "summary: s\n", "#!/bin/sh\necho '{\"changed\":true}'\nexit 2\n")
	r, err = m.Apply(context.Background(), nil, &module.Env{})
	if err != nil || !r.Failed || r.RC != 2 || !strings.Contains(r.Msg, "exited with status 2") {
		t.Fatalf("%+v, %v", r, err)
	}
}

func TestNoCheckModeIsUnknownAndNotRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ran")
	m := newModule(t, "summary: s\nparams:\n  p: {type: string}\n", "#!/bin/sh\ntouch \"$P\"\necho '{\"changed\":true}'\n")
	r, err := m.Apply(context.Background(), map[string]any{"p": p}, &module.Env{Check: true})
	if err != nil || !r.Unknown || r.Changed || !strings.Contains(r.Msg, "check_mode") {
		t.Fatalf("%+v, %v", r, err)
	}
}

func TestDefaultsReachTheProgram(t *testing.T) {
	m := newModule(t, "summary: s\nparams:\n  n: {type: integer, default: 7}\n  s: {type: string}\noutput:\n  req: {type: string}\n",
		"#!/bin/sh\nreq=$(cat | sed 's/\"/\\\\\"/g')\nprintf '{\"output\":{\"req\":\"%s\"}}' \"$req\"\n")
	r, err := m.Apply(context.Background(), nil, &module.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Data["req"]; got != `{"params":{"n":7},"check":false,"diff":true}` {
		t.Fatalf("request = %v", got)
	}
}

func TestScalarParamsInTheEnvironment(t *testing.T) {
	m := newModule(t, "summary: s\ncheck_mode: true\nparams:\n  name: {type: string}\n  n: {type: integer, default: 3}\n  on: {type: boolean}\n  l: {type: list}\noutput:\n  env: {type: string}\n",
		"#!/bin/sh\ncat >/dev/null\nprintf '{\"output\":{\"env\":\"%s|%s|%s|%s|%s\"}}' \"$SOUL_PARAM_NAME\" \"$SOUL_PARAM_N\" \"$SOUL_PARAM_ON\" \"${SOUL_PARAM_L-unset}\" \"$SOUL_CHECK\"\n")
	r, err := m.Apply(context.Background(), map[string]any{"name": "a b", "on": true, "l": []any{1}}, &module.Env{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Data["env"]; got != "a b|3|true|unset|1" {
		t.Fatalf("env = %v", got)
	}
}

func TestFromWireChecksThePin(t *testing.T) {
	m := newModule(t, markerSpec, markerProgram)
	if _, err := FromWire("service.marker", m.SpecData, m.Program, m.SHA256); err != nil {
		t.Fatal(err)
	}
	_, err := FromWire("service.marker", m.SpecData, []byte(markerProgram+"rm -rf /\n"), m.SHA256)
	if err == nil || !strings.Contains(err.Error(), "not the pinned") {
		t.Fatalf("tampered program: %v", err)
	}
	if _, err := FromWire("core.marker", m.SpecData, m.Program, m.SHA256); err == nil {
		t.Fatal("a name outside service. was accepted")
	}
}

func TestParseSpecProblems(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"params: {}\n", "1:1: module.yml needs summary:"},
		{"summary: s\nparms: {}\n", "2:1: unknown key parms in module.yml (did you mean params?)"},
		{"summary: s\nparams:\n  n: {type: int}\n", `3:13: param n: unknown type "int"`},
		{"summary: s\nparams:\n  n: {required: true}\n", "3:6: param n needs type:"},
		{"summary: s\nparams:\n  n: {type: integer, default: x}\n", "3:31: param n: default must be integer"},
		{"summary: s\ntimeout: 2h\n", "2:10: timeout must be above 0 and at most 1h0m0s"},
		{"summary: s\ncheck_mode: yes please\n", "2:13: check_mode must be true or false"},
		{"summary: s\noutput:\n  changed: {type: boolean}\n", "3:3: output field changed is a field every result has"},
		{"summary: s\nmax_output: -1\n", "2:13: max_output must be a number of bytes"},
		{"summary: s\noutput:\n  pages: {tpye: integer}\n", "3:11: output field pages: unknown key tpye (keys: type, description) (did you mean type?)"},
		{"summary: [\n", "1:1: invalid YAML"},
	}
	for _, c := range cases {
		_, ps := ParseSpec("marker", []byte(c.spec))
		var got []string
		for _, p := range ps {
			got = append(got, p.Error())
		}
		if !strings.Contains(strings.Join(got, "\n"), c.want) {
			t.Errorf("%q: problems %q, want %q", c.spec, got, c.want)
		}
	}
	if _, ps := ParseSpec("Bad.Name", []byte("summary: s\n")); len(ps) == 0 {
		t.Error("a bad directory name was accepted")
	}
}

// TestTimeoutKillsTheGroup: a child that ignores SIGTERM dies with its
// group at the timeout.
func TestTimeoutKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	m := newModule(t, "summary: s\ntimeout: 300ms\n", "#!/bin/sh\n(trap '' TERM; sleep 30) &\necho $! > "+pidFile+"\nwait\n")
	if _, err := m.Apply(context.Background(), nil, &module.Env{}); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %s survived the timeout: %s", pid, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
