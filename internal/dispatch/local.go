package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"testing/fstest"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/netguard"
)

// KeeperSID is the SID under which on: keeper tasks run and are recorded.
// It cannot collide with a soul: SIDs are host names.
const KeeperSID = "@keeper"

// Local runs module calls inside the Keeper process: the target of on:
// keeper tasks (keeper-side modules such as core.cloud.created, and the
// modules that make sense anywhere: core.http.request, core.test.*).
// Modules that touch host-global state (packages, services, sysctl, users)
// or run programs (core.exec.run, core.cmd.shell) are refused: they are
// meant for souls, not for the Keeper's own host.
type Local struct {
	// Root confines file-touching modules ("" = the real /).
	Root string
	// Facts returns the Keeper's soulprint; nil means none.
	Facts func() map[string]any
	// DefaultTimeout applies to work without a timeout (0 = none).
	DefaultTimeout time.Duration
	// Logger receives the modules' progress lines; nil discards.
	Logger *slog.Logger
	// HTTP decides which destinations core.http.request may reach from
	// the Keeper (the config's http.allow); nil means netguard's default
	// (public addresses only; loopback, link-local and private refused).
	HTTP *netguard.Policy

	httpOnce   sync.Once
	httpClient *http.Client
	policy     *netguard.Policy
}

var _ Dispatcher = (*Local)(nil)

// Dispatch runs every request in parallel in this process.
func (l *Local) Dispatch(ctx context.Context, reqs []Request, onResult func(string, domain.Result)) map[string]domain.Result {
	out := make(map[string]domain.Result, len(reqs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, req := range reqs {
		wg.Go(func() {
			r := l.run(ctx, req.Work)
			mu.Lock()
			defer mu.Unlock()
			out[req.SID] = r
			if onResult != nil {
				onResult(req.SID, r)
			}
		})
	}
	wg.Wait()
	return out
}

func (l *Local) run(ctx context.Context, w Work) (res domain.Result) {
	start := time.Now()
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = l.DefaultTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res = localFailed(fmt.Sprintf("panic while running the task: %v\n%s", p, debug.Stack()))
		}
		if res.DurationMS == 0 {
			res.DurationMS = time.Since(start).Milliseconds()
		}
		switch err := ctx.Err(); {
		case errors.Is(err, context.DeadlineExceeded):
			res.Failed = true
			res.Msg = joinMsg(fmt.Sprintf("timed out after %s", timeout), res.Msg)
		case err != nil:
			res.Failed = true
			res.Msg = joinMsg("cancelled: "+context.Cause(ctx).Error(), res.Msg)
		}
	}()
	switch {
	case w.Bundle != nil:
		return localFailed("destinies run on souls, not inside the Keeper: drop on: keeper from the task that applies it")
	case w.Call == nil:
		return localFailed("work carries no module call")
	}
	m, ok := module.Lookup(w.Call.Module)
	if !ok {
		return localFailed(fmt.Sprintf("unknown module %s", w.Call.Module))
	}
	if m.Schema().Unconfinable {
		return localFailed(fmt.Sprintf("%s changes host-global state and does not run inside the Keeper: target souls instead of on: keeper", w.Call.Module))
	}
	if m.Schema().RunsProgram {
		return localFailed(fmt.Sprintf("%s runs a program and does not run inside the Keeper: target souls instead of on: keeper", w.Call.Module))
	}
	files, err := filesFS(w.Call.Files)
	if err != nil {
		return localFailed(err.Error())
	}
	client := l.client() // sets l.policy
	env := &module.Env{Check: w.Check, Root: l.Root, Files: files, TemplateData: w.Call.TemplateData, MapKeys: w.Call.KeyOrder.Keys, Log: l.Logger, HTTPClient: client, DialContext: l.policy.DialContext, InKeeper: true}
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	if l.Facts != nil {
		env.Facts = l.Facts()
	}
	params := w.Call.Params
	if params == nil {
		params = map[string]any{}
	}
	res, err = m.Apply(ctx, params, env)
	if err != nil {
		res.Failed = true
		res.Msg = joinMsg(res.Msg, err.Error())
	}
	return res
}

// client returns the HTTP client of the Keeper's destination policy (and
// sets l.policy, which core.wait.port dials through).
func (l *Local) client() *http.Client {
	l.httpOnce.Do(func() {
		p := l.HTTP
		if p == nil {
			var err error
			if p, err = netguard.New(nil); err != nil {
				panic(fmt.Sprintf("netguard default policy: %v", err)) // the default list is a constant
			}
		}
		l.policy, l.httpClient = p, p.Client()
	})
	return l.httpClient
}

// filesFS serves a call's bundle files to the module.
func filesFS(files map[string][]byte) (fs.FS, error) {
	m := make(fstest.MapFS, len(files))
	for name, data := range files {
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("invalid bundle file path %q", name)
		}
		m[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	return m, nil
}

func localFailed(msg string) domain.Result { return domain.Result{Failed: true, RC: -1, Msg: msg} }

func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ": " + b
}
