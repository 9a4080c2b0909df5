package core

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.test.ping", module.Schema{Summary: "Answer pong: checks that the host runs the module", Params: map[string]module.Param{}, ReadOnly: true}, testPing)
	register("core.test.echo", module.Schema{Summary: "Echo a value back as stdout and data.message", Params: map[string]module.Param{"message": {Type: module.TypeAny, Description: "value echoed back as stdout and data.message"}}, ReadOnly: true}, testEcho)
	register("core.test.sleep", module.Schema{Summary: "Wait for a duration", Params: map[string]module.Param{"duration": {Type: module.TypeAny, Required: true, Description: `how long: a Go duration such as "2s", or a number of seconds`}}, ReadOnly: true}, testSleep)
	register("core.test.fail", module.Schema{Summary: "Fail on purpose, with a message", Params: map[string]module.Param{"message": str(false, "failure message")}}, testFail)
}

func testPing(context.Context, map[string]any, *module.Env) (domain.Result, error) {
	return domain.Result{Stdout: "pong", Msg: "pong"}, nil
}

// testEcho returns message as stdout (strings as they are, other values as
// JSON) and unchanged as data.message.
func testEcho(_ context.Context, p map[string]any, _ *module.Env) (domain.Result, error) {
	msg := p["message"]
	out, ok := msg.(string)
	if !ok && msg != nil {
		b, err := json.Marshal(msg)
		if err != nil {
			return domain.Result{}, fmt.Errorf("message cannot be echoed: %w", err)
		}
		out = string(b)
	}
	return domain.Result{Stdout: out, Data: map[string]any{"message": msg}}, nil
}

func testSleep(ctx context.Context, p map[string]any, _ *module.Env) (domain.Result, error) {
	d, err := parseDuration(p["duration"])
	if err != nil {
		return domain.Result{}, fmt.Errorf("param \"duration\": %w", err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return domain.Result{Msg: "slept " + d.String()}, nil
	case <-ctx.Done():
		return failed("sleep of %s interrupted: %v", d, ctx.Err()), nil
	}
}

func testFail(_ context.Context, p map[string]any, _ *module.Env) (domain.Result, error) {
	msg, _ := p["message"].(string)
	if msg == "" {
		msg = "failed as requested by core.test.fail"
	}
	return domain.Result{Failed: true, RC: 1, Msg: msg}, nil
}

// parseDuration accepts a Go duration string or a number of seconds.
func parseDuration(v any) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			return 0, fmt.Errorf("%q is not a duration such as \"2s\" or \"500ms\"", x)
		}
	default:
		f, ok := v.(float64)
		if !ok {
			n, isInt := toInt64(v)
			if !isInt {
				return 0, fmt.Errorf("want a duration such as \"2s\" or a number of seconds, got %T", v)
			}
			f = float64(n)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %s is negative", d)
	}
	return d, nil
}
