package soul

import (
	"context"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/module/custom"
)

// TestRunnerCustomModule: a call of service.<name> runs the program it
// carries, only when the program matches its pin.
func TestRunnerCustomModule(t *testing.T) {
	spec := []byte("summary: s\nparams:\n  who: {type: string}\noutput:\n  hi: {type: string}\n")
	prog := []byte("#!/bin/sh\necho \"{\\\"changed\\\":true,\\\"output\\\":{\\\"hi\\\":\\\"$SOUL_PARAM_WHO\\\"}}\"\n")
	r := &ModuleRunner{}
	call := &dispatch.Call{Module: "service.greet", Params: map[string]any{"who": "soul"},
		Custom: &dispatch.CustomModule{Spec: spec, Program: prog, SHA256: custom.Sum(prog)}}
	res := r.Run(context.Background(), dispatch.Work{Call: call})
	if res.Failed || !res.Changed || res.Data["hi"] != "soul" {
		t.Fatalf("%+v", res)
	}
	call.Custom.Program = append([]byte(nil), prog...)
	call.Custom.Program[len(prog)-2] = ' '
	if res := r.Run(context.Background(), dispatch.Work{Call: call}); !res.Failed || !strings.Contains(res.Msg, "not the pinned") {
		t.Fatalf("tampered program: %+v", res)
	}
	call.Custom = nil
	if res := r.Run(context.Background(), dispatch.Work{Call: call}); !res.Failed || !strings.Contains(res.Msg, "without its program") {
		t.Fatalf("no program: %+v", res)
	}
}
