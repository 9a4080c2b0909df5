package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// Sources of @deps ids: which platform a pushed id belongs to.
const (
	srcChecker  = "checker"
	srcUnknown  = ""
	extSrcPrefx = "ext:"
)

// callResult is the outcome of one apicall command.
type callResult struct {
	value  any
	stderr string
	source string
	err    error
}

// commandError is a command of an apicall that failed: a non-zero exit,
// output that is not JSON, a Soul Stack API error. Inside a condition it is
// an attempt that did not hold (SPEC §13); in an action it fails the step.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// calls runs an apicall: one command, or a list in parallel whose results
// form an array in list order. It returns the result and the source of its
// ids (for @deps): the common source of all commands, else unknown.
func (r *run) calls(step string, c *Calls) (any, string, error) {
	argvs := make([][]string, len(c.Commands))
	for i, cmd := range c.Commands {
		argv, err := cmd.Argv(r.vars)
		if err != nil {
			return nil, "", err
		}
		argvs[i] = argv
		r.logf(step, LogAPICall, map[string]any{"argv": argv}, "apicall: %s", shellJoin(argv))
		if err := r.guardInputs(argv); err != nil {
			return nil, "", &commandError{err: fmt.Errorf("apicall %q: %w", r.mask(shellJoin(argv)), err)}
		}
	}
	results := make([]callResult, len(argvs))
	if len(argvs) == 1 {
		results[0] = r.c.dispatch(r.ctx, r.task.ID, argvs[0])
	} else {
		var wg sync.WaitGroup
		for i, argv := range argvs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = r.c.dispatch(r.ctx, r.task.ID, argv)
			}()
		}
		wg.Wait()
	}
	var errs []error
	values := make([]any, len(results))
	src := results[0].source
	for i, res := range results {
		if res.stderr != "" {
			r.logf(step, LogStderr, map[string]any{"argv": argvs[i]}, "%s", strings.TrimRight(res.stderr, "\n"))
		}
		if res.err != nil {
			errs = append(errs, fmt.Errorf("apicall %q: %w", shellJoin(argvs[i]), res.err))
			continue
		}
		v, err := normalize(res.value)
		if err != nil {
			errs = append(errs, fmt.Errorf("apicall %q: %w", shellJoin(argvs[i]), err))
			continue
		}
		values[i] = v
		if res.source != src {
			src = srcUnknown
		}
	}
	if len(errs) > 0 {
		return nil, "", &commandError{err: errors.Join(errs...)}
	}
	if !c.List {
		return values[0], src, nil
	}
	return values, src, nil
}

// dispatch routes argv: "checker procedure execute" is handled here, a
// bound prefix runs its executable, anything else goes to the Commander.
func (c *Checker) dispatch(ctx context.Context, taskID string, argv []string) callResult {
	if len(argv) >= 3 && argv[0] == "checker" && argv[1] == "procedure" && argv[2] == "execute" {
		v, err := c.execCommand(ctx, taskID, argv[3:])
		return callResult{value: v, source: srcChecker, err: err}
	}
	if b, ok := c.bindings[argv[0]]; ok {
		v, stderr, err := c.external(ctx, b, argv[1:])
		return callResult{value: v, stderr: stderr, source: extSrcPrefx + b.Prefix, err: err}
	}
	if c.commander == nil {
		return callResult{err: fmt.Errorf("no command %q: it is neither built in nor bound to an executable, and no soulctl commander is configured", argv[0])}
	}
	v, err := c.commander.Run(ctx, argv)
	return callResult{value: v, source: srcUnknown, err: err}
}

// execCommand is "checker procedure execute --name X [--vars JSON] [--json
// yes]" run in-process: it launches sub-tasks of the calling task and
// returns their ids (--json yes) or their task objects.
func (c *Checker) execCommand(ctx context.Context, parentID string, args []string) (any, error) {
	var name, vars string
	jsonOut := false
	for i := 0; i < len(args); i++ {
		flag, val, hasVal := strings.Cut(args[i], "=")
		if !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("checker procedure execute: flag %s needs a value", flag)
			}
			i++
			val = args[i]
		}
		switch flag {
		case "--name":
			name = val
		case "--vars":
			vars = val
		case "--json":
			switch val {
			case "yes", "true":
				jsonOut = true
			case "no", "false":
				jsonOut = false
			default:
				return nil, fmt.Errorf("checker procedure execute: --json takes yes or no, got %q", val)
			}
		default:
			return nil, fmt.Errorf("checker procedure execute: unknown flag %q (--name, --vars, --json)", flag)
		}
	}
	if name == "" {
		return nil, errors.New("checker procedure execute: --name is required")
	}
	var vm map[string]any
	if vars != "" {
		if err := json.Unmarshal([]byte(vars), &vm); err != nil {
			return nil, fmt.Errorf("checker procedure execute: --vars is not a JSON object: %w (got %s)", err, vars)
		}
	}
	tasks, err := c.Execute(ctx, ExecRequest{Procedure: name, Vars: vm, ParentID: parentID})
	if err != nil {
		return nil, err
	}
	out := make([]any, len(tasks))
	for i, t := range tasks {
		if jsonOut {
			out[i] = t.ID
		} else {
			out[i] = map[string]any{"task_id": t.ID, "task_name": t.Procedure, "task_status": t.Status}
		}
	}
	return out, nil
}

// maxOutput caps how much of an external command's stdout/stderr is kept.
const maxOutput = 4 << 20

// external runs a bound executable and decodes its stdout as JSON.
func (c *Checker) external(ctx context.Context, b Binding, args []string) (any, string, error) {
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.Executable, append(append([]string{}, b.Args...), args...)...)
	cmd.Env = append(childEnv(os.Environ()), b.Env...)
	cmd.WaitDelay = time.Second
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxOutput, maxOutput
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	errText := strings.TrimSpace(stderr.String())
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, stderr.String(), fmt.Errorf("%s: timed out after %s", b.Prefix, timeout)
	case ctx.Err() != nil:
		return nil, stderr.String(), ctx.Err()
	case err != nil && errText != "":
		return nil, stderr.String(), fmt.Errorf("%s: %w: %s", b.Prefix, err, lastLine(errText))
	case err != nil:
		return nil, stderr.String(), fmt.Errorf("%s: %w", b.Prefix, err)
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if len(out) == 0 {
		return nil, stderr.String(), nil
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, stderr.String(), fmt.Errorf("%s: stdout is not JSON: %w", b.Prefix, err)
	}
	return v, stderr.String(), nil
}

// keeperOnlyEnv are the variables of the keeper's environment that hold
// its own credentials (the database URL with its password): a bound
// executable gets the rest of the environment, not these. A binding that
// needs one sets it in its env.
var keeperOnlyEnv = []string{"SOULSTACK_DATABASE_URL", "PGPASSWORD"}

// childEnv is env without keeperOnlyEnv.
func childEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keeperOnlyEnv, name) {
			out = append(out, kv)
		}
	}
	return out
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// limitedBuffer keeps the first max bytes written and discards the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// shellJoin renders argv for the step log, quoting where needed.
func shellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`{}[]*?;&|<>()#") {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

// guardInputs asks the Checker's InputGuard about a Commander command
// line that carries one of the task's secrets.
func (r *run) guardInputs(argv []string) error {
	if len(r.secrets) == 0 || len(argv) == 0 {
		return nil
	}
	if _, bound := r.c.bindings[argv[0]]; bound {
		return nil
	}
	line := strings.Join(argv, " ")
	for _, s := range r.secrets {
		if !strings.Contains(line, s) {
			continue
		}
		if argv[0] == "checker" {
			return r.guardSubVars(argv)
		}
		if r.c.inputGuard == nil {
			return nil
		}
		return r.c.inputGuard(r.ctx, argv, r.secrets)
	}
	return nil
}

// guardSubVars refuses "checker procedure execute --vars JSON" passing a
// secret into a var of the sub-procedure that is not secret: true (its
// task would store it in clear).
func (r *run) guardSubVars(argv []string) error {
	if len(argv) < 3 || argv[1] != "procedure" || argv[2] != "execute" {
		return nil
	}
	var name, vars string
	for i := 3; i < len(argv); i++ {
		flag, val, hasVal := strings.Cut(argv[i], "=")
		if !hasVal && i+1 < len(argv) {
			i++
			val = argv[i]
		}
		switch flag {
		case "--name":
			name = val
		case "--vars":
			vars = val
		}
	}
	var vm map[string]any
	if name == "" || json.Unmarshal([]byte(vars), &vm) != nil {
		return nil // execCommand says what is wrong
	}
	p, err := r.c.LoadProcedure(r.ctx, name)
	if err != nil {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(vm)) {
		if d := p.Var(k); d != nil && d.Secret {
			continue
		}
		text := secretText(vm[k])
		for _, s := range r.secrets {
			if strings.Contains(text, s) {
				return fmt.Errorf("var %q of procedure %s is given a secret but is not declared secret: true: its task would store it in clear; declare it secret: true there, or pass no secret", k, name)
			}
		}
	}
	return nil
}
