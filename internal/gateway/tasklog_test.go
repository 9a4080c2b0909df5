package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/soul"
)

// SPEC §10.3: a soul keeps its own record of the tasks it ran, without
// params values: a task dispatched through the keeper lands in the soul's
// data dir as one JSON line.
func TestSoulRecordsDispatchedTasks(t *testing.T) {
	dir := t.TempDir()
	k := startKeeper(t, filepath.Join(dir, "keeper"), keeperOpts{})
	data := filepath.Join(dir, "rec")
	root := filepath.Join(dir, "root")
	runAgent(t, soul.Config{KeeperURL: k.url, SID: "rec", DataDir: data, Root: root, JoinToken: k.joinToken(t)})
	k.waitConnected(t, "rec")
	const secret = "pw-7f3a9c-secret"
	res := k.gw.Dispatch(context.Background(), calls([]string{"rec"}, "write-pw", "core.file.present", map[string]any{"path": "/pw", "content": secret}, 10*time.Second), nil)
	if r := res["rec"]; r.Failed || !r.Changed {
		t.Fatalf("dispatch = %+v", r)
	}
	raw, err := os.ReadFile(filepath.Join(data, soul.TaskLogFile))
	if err != nil {
		t.Fatal(err)
	}
	line := string(raw)
	if strings.Contains(line, secret) {
		t.Fatalf("the soul's record holds a params value: %s", line)
	}
	for _, want := range []string{`"task_id":"write-pw/rec"`, `"module":"core.file.present"`, `"status":"changed"`, `"changed":true`} {
		if !strings.Contains(line, want) {
			t.Errorf("record %s lacks %s", line, want)
		}
	}
}
