package dispatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	_ "github.com/soulstack/soulstack/internal/module/core"
)

func TestLocalRunsModulesInProcess(t *testing.T) {
	l := &dispatch.Local{}
	for _, tc := range []struct {
		name    string
		work    dispatch.Work
		failed  bool
		msg     string
		message string
	}{
		{name: "a module that runs anywhere", work: dispatch.Work{Call: &dispatch.Call{Module: "core.test.echo", Params: map[string]any{"message": "hi"}}}, message: "hi"},
		{name: "host-global modules are refused", work: dispatch.Work{Call: &dispatch.Call{Module: "core.pkg.installed", Params: map[string]any{"name": "htop"}}}, failed: true, msg: "does not run inside the Keeper"},
		{name: "commands are refused", work: dispatch.Work{Call: &dispatch.Call{Module: "core.exec.run", Params: map[string]any{"command": "echo pwned"}}}, failed: true, msg: "runs a program and does not run inside the Keeper"},
		{name: "shell commands are refused", work: dispatch.Work{Call: &dispatch.Call{Module: "core.cmd.shell", Params: map[string]any{"cmd": "echo pwned"}}}, failed: true, msg: "runs a program and does not run inside the Keeper"},
		{name: "a file module's validate: is refused", work: dispatch.Work{Call: &dispatch.Call{Module: "core.file.present", Params: map[string]any{"path": "/tmp/soulstack-never-written", "content": "x", "validate": "touch /tmp/soulstack-pwned-%s"}}}, failed: true, msg: "never happens inside the Keeper"},
		{name: "unknown module", work: dispatch.Work{Call: &dispatch.Call{Module: "core.nope"}}, failed: true, msg: "unknown module"},
		{name: "no destiny bundles", work: dispatch.Work{Bundle: &dispatch.Bundle{Destiny: "d"}}, failed: true, msg: "destinies run on souls"},
		{name: "the timeout fails the task", work: dispatch.Work{Timeout: 20 * time.Millisecond, Call: &dispatch.Call{Module: "core.test.sleep", Params: map[string]any{"duration": "5s"}}}, failed: true, msg: "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := l.Dispatch(context.Background(), []dispatch.Request{{SID: dispatch.KeeperSID, Work: tc.work}}, nil)[dispatch.KeeperSID]
			if r.Failed != tc.failed || !strings.Contains(r.Msg, tc.msg) {
				t.Errorf("got failed=%v msg=%q, want failed=%v msg containing %q", r.Failed, r.Msg, tc.failed, tc.msg)
			}
			if tc.message != "" && !strings.Contains(r.Stdout, tc.message) {
				t.Errorf("stdout %q, want %q", r.Stdout, tc.message)
			}
		})
	}
}
