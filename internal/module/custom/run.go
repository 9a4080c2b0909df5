package custom

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

const (
	// stderrCap bounds the standard error kept from a program.
	stderrCap = 64 << 10
	// killGrace is the time between SIGTERM and SIGKILL at a timeout.
	killGrace = 2 * time.Second
)

// Module is a custom module ready to run: its spec and its program, pinned
// by SHA-256. It implements module.Module.
type Module struct {
	Spec *Spec
	// SpecData is module.yml as read; it travels with every call.
	SpecData []byte
	Program  []byte
	// SHA256 is the hex SHA-256 of Program.
	SHA256 string
}

var _ module.Module = (*Module)(nil)

// New parses module.yml of module dir and pins program.
func New(dir string, specData, program []byte) (*Module, []Problem) {
	s, ps := ParseSpec(dir, specData)
	if len(ps) > 0 {
		return nil, ps
	}
	return &Module{Spec: s, SpecData: specData, Program: program, SHA256: Sum(program)}, nil
}

// Sum is the hex SHA-256 of b.
func Sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// FromWire rebuilds the module a call carries (on the soul): the program
// must match the pin, the spec must parse.
func FromWire(name string, specData, program []byte, pin string) (*Module, error) {
	dir, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return nil, fmt.Errorf("custom module %s: name does not start with %s", name, Prefix)
	}
	if got := Sum(program); pin == "" || got != pin {
		return nil, fmt.Errorf("%s: the program's sha256 is %s, not the pinned %q: not run", name, got, pin)
	}
	m, ps := New(dir, specData, program)
	if len(ps) > 0 {
		return nil, fmt.Errorf("%s: module.yml: %v", name, ps[0])
	}
	return m, nil
}

// Name is service.<dir>.
func (m *Module) Name() string { return m.Spec.Name }

// Schema is what module.yml declares.
func (m *Module) Schema() module.Schema { return m.Spec.Schema }

// request is what the program reads on stdin.
type request struct {
	Params map[string]any `json:"params"`
	Check  bool           `json:"check"`
	Diff   bool           `json:"diff"`
}

// response is what the program prints on stdout.
type response struct {
	Changed bool           `json:"changed"`
	Failed  bool           `json:"failed"`
	Msg     string         `json:"msg"`
	Diff    string         `json:"diff"`
	Output  map[string]any `json:"output"`
}

// Apply runs the program with params (defaults filled in) under the
// module's timeout and output bound. In check mode a module that does not
// declare check_mode is not run: its result is unknown.
func (m *Module) Apply(ctx context.Context, params map[string]any, env *module.Env) (domain.Result, error) {
	res, err := m.apply(ctx, params, env)
	if err != nil {
		return res, fmt.Errorf("%s on %s: %w", m.Spec.Name, hostName(), err)
	}
	return res, nil
}

func (m *Module) apply(ctx context.Context, params map[string]any, env *module.Env) (domain.Result, error) {
	name := m.Spec.Name
	if err := module.ValidateParams(m.Spec.Schema, params); err != nil {
		return domain.Result{}, err
	}
	if env.InKeeper {
		return domain.Result{}, errors.New("a custom module runs a program and never runs inside the Keeper")
	}
	if env.Root != "" {
		// --root confines the files the core modules touch, not what a
		// program does: the program would write the real filesystem of
		// this machine (keeper dev's souls, soul swarm, apply --root).
		return domain.Result{}, fmt.Errorf("%s cannot be confined to --root %s: it runs the service's program modules/%s/run, whose writes would land on this machine's real filesystem; run it on a soul without --root (a real or lab host)",
			name, env.Root, strings.TrimPrefix(name, Prefix))
	}
	if env.Check && !m.Spec.CheckMode {
		return domain.Result{Unknown: true, Msg: fmt.Sprintf("would run; result unknown in check mode (%s does not declare check_mode: true)", name)}, nil
	}
	full := make(map[string]any, len(m.Spec.Schema.Params))
	for k, p := range m.Spec.Schema.Params {
		if v := params[k]; v != nil {
			full[k] = v
		} else if p.Default != nil {
			full[k] = p.Default
		}
	}
	in, err := json.Marshal(request{Params: full, Check: env.Check, Diff: true})
	if err != nil {
		return domain.Result{}, fmt.Errorf("encoding the request: %w", err)
	}
	out, err := m.run(ctx, in, paramEnv(full, env.Check))
	if err != nil {
		return domain.Result{RC: out.rc, Stderr: out.stderr}, err
	}
	return m.result(out)
}

// outcome is what the program did.
type outcome struct {
	rc     int
	stdout []byte
	stderr string
}

// run writes the program to a private temporary directory and runs it with
// in on stdin, in its own process group, bounded by the module's timeout.
func (m *Module) run(ctx context.Context, in []byte, extra []string) (outcome, error) {
	name := m.Spec.Name
	dir, err := os.MkdirTemp("", "soulstack-module-")
	if err != nil {
		return outcome{rc: -1}, fmt.Errorf("creating a directory for the program: %w", err)
	}
	defer os.RemoveAll(dir)
	prog := filepath.Join(dir, "run")
	if err := os.WriteFile(prog, m.Program, 0o700); err != nil {
		return outcome{rc: -1}, fmt.Errorf("writing the program: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.Spec.Timeout)
	defer cancel()
	stdout := &capWriter{limit: m.Spec.MaxOutput}
	stderr := &capWriter{limit: stderrCap}
	var cmd *exec.Cmd
	for attempt := 0; ; attempt++ {
		cmd = exec.CommandContext(ctx, prog)
		cmd.Dir = dir
		cmd.Env = append(environ(), extra...)
		cmd.Stdin = bytes.NewReader(in)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
		cmd.WaitDelay = killGrace
		err = cmd.Start()
		// A program just written may be busy for a moment while another
		// goroutine forks (the child holds the write descriptor until it
		// execs): retry briefly.
		if err != nil && errors.Is(err, syscall.ETXTBSY) && attempt < 20 {
			time.Sleep(25 * time.Millisecond)
			continue
		}
		break
	}
	if err != nil {
		return outcome{rc: 127}, fmt.Errorf("cannot start modules/%s/run: %w (is its interpreter, the #! line, installed on this host?)", strings.TrimPrefix(name, Prefix), unwrapExec(err))
	}
	pgid := cmd.Process.Pid
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		// Timed out or cancelled: the group got SIGTERM; whatever of it
		// is left (a child ignoring SIGTERM) gets SIGKILL. A program that
		// exits by itself keeps its background children, as a command
		// does (a module may start a daemon).
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	out := outcome{rc: -1, stdout: stdout.buf, stderr: stderr.String()}
	if ps := cmd.ProcessState; ps != nil {
		out.rc = ps.ExitCode()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, fmt.Errorf("timed out after %s (timeout: in module.yml) and was killed", m.Spec.Timeout)
	}
	if ctx.Err() != nil {
		return out, fmt.Errorf("cancelled: %w", ctx.Err())
	}
	if stdout.truncated {
		return out, fmt.Errorf("the program printed more than %d bytes on stdout (max_output: in module.yml): result dropped", m.Spec.MaxOutput)
	}
	if waitErr != nil && out.rc < 0 {
		return out, waitErr
	}
	return out, nil
}

// result turns what the program printed into the task's result.
func (m *Module) result(out outcome) (domain.Result, error) {
	res := domain.Result{RC: out.rc, Stderr: out.stderr}
	var resp response
	dec := json.NewDecoder(bytes.NewReader(out.stdout))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	err := dec.Decode(&resp)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		why := fmt.Sprintf("the program printed no valid JSON result on stdout (%v): %s", err, preview(out.stdout))
		if out.rc != 0 {
			why = fmt.Sprintf("the program exited with status %d and %s", out.rc, strings.TrimPrefix(why, "the program "))
			if l := lastLine(out.stderr); l != "" {
				why += "; stderr: " + l
			}
		}
		return res, errors.New(why)
	}
	res.Changed, res.Failed, res.Msg, res.Diff = resp.Changed, resp.Failed, resp.Msg, resp.Diff
	if out.rc != 0 && !res.Failed {
		res.Failed = true
		res.Msg = strings.TrimPrefix(fmt.Sprintf("%s; the program exited with status %d", res.Msg, out.rc), "; ")
	}
	data, err := m.output(resp.Output)
	if err != nil {
		return res, err
	}
	res.Data = data
	return res, nil
}

// output checks the program's output fields against the declared ones.
func (m *Module) output(o map[string]any) (map[string]any, error) {
	if len(o) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	data := make(map[string]any, len(o))
	for _, k := range keys {
		f, ok := m.Spec.Schema.Output[k]
		if !ok {
			return nil, fmt.Errorf("the program returned output field %q that module.yml does not declare under output:", k)
		}
		v := normalize(o[k])
		if v != nil && !module.HasType(f.Type, v) {
			return nil, fmt.Errorf("the program returned output field %q of the wrong type: module.yml declares %s", k, f.Type)
		}
		data[k] = v
	}
	return data, nil
}

// normalize turns json.Numbers into int64 when integral, else float64.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}

func preview(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(nothing)"
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func unwrapExec(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// paramEnv passes the scalar params (strings, numbers, booleans) as
// SOUL_PARAM_<NAME> and check mode as SOUL_CHECK (1 or 0) too, so a shell
// module needs no JSON parser for simple params; the JSON request on stdin
// stays the whole truth.
func paramEnv(params map[string]any, check bool) []string {
	out := []string{"SOUL_CHECK=0"}
	if check {
		out[0] = "SOUL_CHECK=1"
	}
	for k, v := range params {
		switch v.(type) {
		case string, bool, int, int64, float64, json.Number:
			s := fmt.Sprint(v)
			if !strings.ContainsRune(s, 0) {
				out = append(out, "SOUL_PARAM_"+strings.ToUpper(k)+"="+s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// environ is the program's environment: a fixed PATH and a few variables
// of the soul's, so a module behaves the same whatever the soul's own
// environment was.
func environ() []string {
	env := map[string]string{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
	for _, k := range []string{"HOME", "LANG", "LC_ALL", "TZ", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			env[k] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// capWriter keeps the first limit bytes written and notes the rest.
type capWriter struct {
	limit     int
	buf       []byte
	truncated bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	keep := p
	if room := w.limit - len(w.buf); len(p) > room {
		w.truncated = true
		keep = p[:max(room, 0)]
	}
	w.buf = append(w.buf, keep...)
	return len(p), nil
}

func (w *capWriter) String() string { return string(w.buf) }

func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return "this host"
	}
	return h
}
