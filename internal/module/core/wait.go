package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/netguard"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	timeout := module.Param{Type: module.TypeInt, Default: int64(60), Description: "seconds to wait before failing (1-3600)"}
	waitOut := map[string]module.Field{
		"elapsed_ms": outputField(module.TypeInt, "how long the condition took to hold"),
	}
	registerNamed("core.wait.port", module.Schema{
		Summary: "Wait until a TCP port accepts connections (or, state: stopped, no longer does)",
		Params: map[string]module.Param{
			"host":    {Type: module.TypeString, Default: "127.0.0.1", Description: "host or address to connect to"},
			"port":    {Type: module.TypeInt, Required: true, Description: "TCP port"},
			"state":   {Type: module.TypeString, Default: "started", Description: "started (accepts connections) or stopped"},
			"timeout": timeout,
		},
		Output: waitOut,
		Example: `- name: Wait for redis
  module: core.wait.port
  params:
    port: 6379
    timeout: 30
`,
	}, waitPort)
	registerNamed("core.wait.file", module.Schema{
		Summary: "Wait until a path exists (or, state: absent, no longer does)",
		Params: map[string]module.Param{
			"path":    str(true, "absolute path"),
			"state":   {Type: module.TypeString, Default: "present", Description: "present or absent"},
			"timeout": timeout,
		},
		Output: waitOut,
		Example: `- name: Wait for the app's socket
  module: core.wait.file
  params:
    path: /run/app/app.sock
`,
	}, waitFile)
	registerNamed("core.wait.http", module.Schema{
		Summary: "Wait until a URL answers GET with the wanted status",
		Params: map[string]module.Param{
			"url":     str(true, "http:// or https:// URL"),
			"status":  {Type: module.TypeInt, Default: int64(200), Description: "status code wanted"},
			"timeout": timeout,
		},
		Output: withFields(waitOut, map[string]module.Field{
			"http_status": outputField(module.TypeInt, "the last HTTP status seen (0: no answer)"),
		}),
		Example: `- name: Wait until the app is healthy
  module: core.wait.http
  params:
    url: http://127.0.0.1:8080/healthz
    status: 200
    timeout: 120
`,
	}, waitHTTP)
}

const waitPoll = 250 * time.Millisecond

// waitFor polls probe until it reports done or timeout seconds passed. In
// check mode nothing is waited for: the state may depend on tasks check
// mode did not run.
func waitUntil(ctx context.Context, env *module.Env, a *args, what string, probe func(context.Context) (bool, string)) (domain.Result, error) {
	secs, _ := a.integer("timeout")
	if a.has("timeout") && (secs < 1 || secs > 3600) {
		return domain.Result{}, paramErr("timeout", "%d: want 1 to 3600 seconds", secs)
	}
	if secs == 0 {
		secs = 60
	}
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if env.Check {
		return converged("check mode: would wait up to "+strconv.FormatInt(secs, 10)+"s for "+what, map[string]any{"elapsed_ms": int64(0)}), nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second)
	defer cancel()
	last := ""
	for {
		ok, why := probe(ctx)
		last = why
		if ok {
			return converged(fmt.Sprintf("%s after %s", what, time.Since(start).Round(time.Millisecond)),
				map[string]any{"elapsed_ms": time.Since(start).Milliseconds()}), nil
		}
		select {
		case <-ctx.Done():
			r := failed("timed out after %ds waiting for %s (last: %s)", secs, what, last)
			r.Data = map[string]any{"elapsed_ms": time.Since(start).Milliseconds()}
			return r, nil
		case <-time.After(waitPoll):
		}
	}
}

func waitPort(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	host, state := a.str("host"), a.str("state")
	port, _ := a.integer("port")
	if host == "" {
		host = "127.0.0.1"
	}
	if port < 1 || port > 65535 {
		return domain.Result{}, paramErr("port", "%d: want 1 to 65535", port)
	}
	if state == "" {
		state = "started"
	}
	if state != "started" && state != "stopped" {
		return domain.Result{}, paramErr("state", "%q: want started or stopped", state)
	}
	addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
	d := net.Dialer{Timeout: time.Second}
	dial := d.DialContext
	if env.InKeeper {
		// The Keeper's outbound traffic goes through its http.allow policy
		// (audit M2): the probe dials through it, and a destination it
		// refuses is an error at once, never a "stopped" port.
		if env.DialContext == nil {
			return domain.Result{}, errors.New("core.wait.port inside the Keeper (on: keeper) needs the Keeper's destination policy, which this runner lacks: target souls instead")
		}
		policy := env.DialContext
		dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			return policy(ctx, network, address)
		}
		if c, err := dial(ctx, "tcp", addr); errors.Is(err, netguard.ErrRefused) {
			return domain.Result{}, fmt.Errorf("core.wait.port on the Keeper: %w", err)
		} else if err == nil {
			c.Close()
		}
	}
	return waitUntil(ctx, env, a, addr+" "+state, func(ctx context.Context) (bool, string) {
		c, err := dial(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return state == "started", "accepting connections"
		}
		if errors.Is(err, netguard.ErrRefused) {
			return false, err.Error()
		}
		return state == "stopped", err.Error()
	})
}

func waitFile(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	file, state := a.str("path"), a.str("state")
	if a.err == nil && (file == "" || file[0] != '/') {
		return domain.Result{}, paramErr("path", "%q must be absolute", file)
	}
	if state == "" {
		state = "present"
	}
	if state != "present" && state != "absent" {
		return domain.Result{}, paramErr("state", "%q: want present or absent", state)
	}
	return waitUntil(ctx, env, a, file+" "+state, func(context.Context) (bool, string) {
		t, err := fsOf(env).Open(file, safefs.Options{})
		exists := false
		if err == nil {
			_, exists, err = t.Lstat()
			t.Close()
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err.Error()
		}
		if exists {
			return state == "present", "exists"
		}
		return state == "absent", "does not exist"
	})
}

func waitHTTP(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	raw := a.str("url")
	want, _ := a.integer("status")
	if want == 0 {
		want = 200
	}
	u, err := url.Parse(raw)
	if a.err == nil && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return domain.Result{}, paramErr("url", "%q: want an http:// or https:// URL", raw)
	}
	if want < 100 || want > 599 {
		return domain.Result{}, paramErr("status", "%d is not an HTTP status", want)
	}
	client := env.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	var last int64
	res, err := waitUntil(ctx, env, a, fmt.Sprintf("%s to answer %d", raw, want), func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := client.Do(req)
		if err != nil {
			last = 0
			return false, err.Error()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		last = int64(resp.StatusCode)
		return last == want, "status " + strconv.FormatInt(last, 10)
	})
	if res.Data != nil {
		res.Data["http_status"] = last
	}
	return res, err
}
