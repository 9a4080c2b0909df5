package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Request is what a provider is asked (the exec kind's stdin).
type Request struct {
	// Op is create, delete or list.
	Op          string         `json:"op"`
	Provider    string         `json:"provider"`
	Incarnation string         `json:"incarnation"`
	Profile     RequestProfile `json:"profile"`
	// Names are the instances to create or delete (list: the ones asked
	// about; empty means every instance of the provider).
	Names []string `json:"names"`
	// Bootstrap is set for create.
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`
}

// RequestProfile is the profile part of a Request.
type RequestProfile struct {
	Name string         `json:"name"`
	Spec map[string]any `json:"spec"`
}

// Instance is what a provider reports of one instance.
type Instance struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Address string `json:"address"`
}

// Driver is one provider kind.
type Driver interface {
	// Create creates the named instances, applying req.Bootstrap, and
	// returns them.
	Create(ctx context.Context, req Request) ([]Instance, error)
	// Delete deletes the named instances; deleting a missing one is no
	// error.
	Delete(ctx context.Context, req Request) error
	// List returns the instances among req.Names that exist.
	List(ctx context.Context, req Request) ([]Instance, error)
}

// outputCap bounds what is kept of a provider's stdout and stderr.
const outputCap = 1 << 20

// execDriver runs an executable per call: the request as JSON on stdin,
// the instances as JSON on stdout, a non-zero exit is an error with its
// stderr.
type execDriver struct {
	name    string
	cfg     ExecConfig
	timeout time.Duration
}

func (d execDriver) Create(ctx context.Context, req Request) ([]Instance, error) {
	return d.instances(ctx, req)
}

func (d execDriver) List(ctx context.Context, req Request) ([]Instance, error) {
	return d.instances(ctx, req)
}

func (d execDriver) Delete(ctx context.Context, req Request) error {
	_, err := d.call(ctx, req)
	return err
}

func (d execDriver) instances(ctx context.Context, req Request) ([]Instance, error) {
	out, err := d.call(ctx, req)
	if err != nil {
		return nil, err
	}
	var list []Instance
	if err := json.Unmarshal(bytes.TrimSpace(out), &list); err != nil {
		return nil, fmt.Errorf("provider %s: %s printed no JSON list of instances [{name, id, address}] on stdout (%v): %q", d.name, req.Op, err, abbrev(string(out), 200))
	}
	return list, nil
}

// call runs the executable once. Its environment is a minimal one (PATH,
// HOME, LANG, TMPDIR of the Keeper) plus the config's env: the Keeper's
// own variables (its database URL) do not leak. The program runs in its
// own process group, killed whole when the call times out; what it leaves
// running in the background must not hold its stdout or stderr open.
func (d execDriver) call(ctx context.Context, req Request) ([]byte, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.cfg.Executable, d.cfg.Args...)
	cmd.Env = d.env()
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr capBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("provider %s: %s did not answer within %s (killed); stderr: %s", d.name, req.Op, d.timeout, abbrev(stderr.String(), 500))
	case ctx.Err() != nil:
		return nil, fmt.Errorf("provider %s: %s: %w", d.name, req.Op, context.Cause(ctx))
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("provider %s: %s exited with status %d: %s", d.name, req.Op, ee.ExitCode(), abbrev(strings.TrimSpace(stderr.String()), 500))
		}
		return nil, fmt.Errorf("provider %s: running %s: %w", d.name, d.cfg.Executable, err)
	}
	return stdout.Bytes(), nil
}

func (d execDriver) env() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := os.LookupEnv("PATH"); !ok {
		env = append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	keys := make([]string, 0, len(d.cfg.Env))
	for k := range d.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+d.cfg.Env[k])
	}
	return env
}

// capBuffer keeps the first outputCap bytes written to it.
type capBuffer struct{ bytes.Buffer }

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := outputCap - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func abbrev(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ServeExec is the provider side of the exec protocol over driver d: it
// reads one Request from in, runs it and writes the instances (an empty
// list for delete) to out as JSON. `keeper cloud-local` serves the local
// kind this way, so an exec provider can drive local hosts.
func ServeExec(ctx context.Context, in io.Reader, out io.Writer, d func(Request) (Driver, error)) error {
	var req Request
	if err := json.NewDecoder(io.LimitReader(in, 8<<20)).Decode(&req); err != nil {
		return fmt.Errorf("reading the request on stdin: %w", err)
	}
	drv, err := d(req)
	if err != nil {
		return err
	}
	list := []Instance{}
	switch req.Op {
	case "create":
		list, err = drv.Create(ctx, req)
	case "list":
		list, err = drv.List(ctx, req)
	case "delete":
		err = drv.Delete(ctx, req)
	default:
		err = fmt.Errorf("unknown op %q: want create, list or delete", req.Op)
	}
	if err != nil {
		return err
	}
	if list == nil {
		list = []Instance{}
	}
	return json.NewEncoder(out).Encode(list)
}
