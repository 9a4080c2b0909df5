package soul

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing/fstest"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/module/custom"
)

// Runner executes one piece of work on this host. It always returns a
// result: failures are results with Failed set, never errors.
type Runner interface {
	Run(ctx context.Context, w dispatch.Work) domain.Result
}

// BundleFunc runs a destiny bundle (the destiny executor plugs in here).
// env carries check mode, the root, the facts and the task logger.
type BundleFunc func(ctx context.Context, b *dispatch.Bundle, env *module.Env) domain.Result

// ModuleRunner is the Runner of a real soul: a Call goes to the module
// registry, a Bundle to Bundle. Work.Timeout bounds either as a context
// deadline.
type ModuleRunner struct {
	// Root confines file-touching modules ("" = the real /).
	Root string
	// Facts returns the host's current soulprint; nil means none.
	Facts func() map[string]any
	// Bundle runs destiny bundles; nil refuses them.
	Bundle BundleFunc
	// Logger is the fallback task logger when the context carries none.
	Logger *slog.Logger
}

var _ Runner = (*ModuleRunner)(nil)

// Run executes w and reports how it went.
func (r *ModuleRunner) Run(ctx context.Context, w dispatch.Work) (res domain.Result) {
	start := time.Now()
	if w.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.Timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res = failed(fmt.Sprintf("panic while running the task: %v\n%s", p, debug.Stack()))
		}
		res = finishResult(ctx, res, w.Timeout, start)
	}()
	env := &module.Env{Check: w.Check, Root: r.Root, Log: r.taskLogger(ctx)}
	if r.Facts != nil {
		env.Facts = r.Facts()
	}
	switch {
	case w.Call != nil && w.Bundle != nil:
		return failed("work carries both a module call and a destiny bundle")
	case w.Call != nil:
		return r.call(ctx, w.Call, env)
	case w.Bundle != nil:
		if r.Bundle == nil {
			return failed("destiny bundles not supported by this soul")
		}
		return r.Bundle(ctx, w.Bundle, env)
	default:
		return failed("work carries neither a module call nor a destiny bundle")
	}
}

func (r *ModuleRunner) call(ctx context.Context, c *dispatch.Call, env *module.Env) domain.Result {
	var m module.Module
	if strings.HasPrefix(c.Module, custom.Prefix) {
		if c.Custom == nil {
			return failed(fmt.Sprintf("custom module %s arrived without its program", c.Module))
		}
		cm, err := custom.FromWire(c.Module, c.Custom.Spec, c.Custom.Program, c.Custom.SHA256)
		if err != nil {
			return failed(err.Error())
		}
		m = cm
	} else if lm, ok := module.Lookup(c.Module); ok {
		m = lm
	} else {
		return failed(fmt.Sprintf("unknown module %s on this soul", c.Module))
	}
	files, err := mapFS(c.Files)
	if err != nil {
		return failed(err.Error())
	}
	env.Files = files
	env.TemplateData = c.TemplateData
	env.MapKeys = c.KeyOrder.Keys
	params := c.Params
	if params == nil {
		params = map[string]any{}
	}
	res, err := m.Apply(ctx, params, env)
	if err != nil {
		res.Failed = true
		if res.Msg == "" {
			res.Msg = err.Error()
		} else {
			res.Msg += ": " + err.Error()
		}
	}
	return res
}

func (r *ModuleRunner) taskLogger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(taskLoggerKey{}).(*slog.Logger); ok {
		return l
	}
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// mapFS serves a call's bundle files to the module.
func mapFS(files map[string][]byte) (fs.FS, error) {
	m := make(fstest.MapFS, len(files))
	for name, data := range files {
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("invalid bundle file path %q: paths are relative, slash-separated, without '..'", name)
		}
		m[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	return m, nil
}

// finishResult fills the duration and turns a deadline or a cancellation
// into a clear failure.
func finishResult(ctx context.Context, res domain.Result, timeout time.Duration, start time.Time) domain.Result {
	if res.DurationMS == 0 {
		res.DurationMS = time.Since(start).Milliseconds()
	}
	var why string
	switch err := ctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		why = fmt.Sprintf("timed out after %s", timeout)
	case err != nil:
		why = "cancelled: " + context.Cause(ctx).Error()
	default:
		return res
	}
	res.Failed = true
	if res.Msg == "" {
		res.Msg = why
	} else {
		res.Msg = why + ": " + res.Msg
	}
	return res
}

func failed(msg string) domain.Result {
	return domain.Result{Failed: true, RC: -1, Msg: msg}
}

// taskLoggerKey carries the logger a task's progress lines go to.
type taskLoggerKey struct{}

// WithTaskLogger returns ctx carrying l as the task logger, which
// ModuleRunner hands to modules as Env.Log.
func WithTaskLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, taskLoggerKey{}, l)
}
