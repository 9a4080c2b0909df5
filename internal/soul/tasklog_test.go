package soul

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
)

const secretValue = "Hunter2-S3cr3t!"

func readEntries(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// SPEC §10.3: every task is recorded (time, run, task, module, how it
// ended) in the data dir and in the journal, never a params value, a
// message or output.
func TestTaskLogRecordsWithoutSecrets(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "journal.sock")
	jl, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer jl.Close()
	path := filepath.Join(dir, "data", TaskLogFile)
	l, err := OpenTaskLog(path, TaskLogOptions{Journal: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	call := dispatch.Work{RunID: "run-1", TaskID: "run-1/3/h1/1", Task: "Write the password file",
		Call: &dispatch.Call{Module: "core.file.present", Params: map[string]any{"path": "/etc/pw", "content": secretValue}}}
	res := domain.Result{Changed: true, Msg: "wrote " + secretValue, Diff: "+" + secretValue, Stdout: secretValue, DurationMS: 7}
	end := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	if err := l.Record(call, res, end); err != nil {
		t.Fatal(err)
	}
	bundle := dispatch.Work{RunID: "run-1", TaskID: "run-1/4/h1/1", Task: "Apply redis", Check: true,
		Bundle: &dispatch.Bundle{Destiny: "redis", Input: map[string]any{"password": secretValue}}}
	bres := domain.Result{Failed: true, Msg: secretValue, Tasks: []domain.TaskResult{
		{Name: "Install", Module: "core.pkg.installed", Result: domain.Result{Changed: true}},
		{Name: "Config", Result: domain.Result{Failed: true, Tasks: []domain.TaskResult{{Name: "Write", Module: "core.file.rendered", Result: domain.Result{Failed: true, Msg: secretValue}}}}},
	}}
	if err := l.Record(bundle, bres, end); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secretValue) || strings.Contains(string(raw), "/etc/pw") {
		t.Fatalf("the record holds a params value or a message:\n%s", raw)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, want 0600", fi.Mode())
	}
	got := readEntries(t, path)
	want := []map[string]any{
		{"time": "2026-12-01T21:00:00Z", "run": "run-1", "task_id": "run-1/3/h1/1", "task": "Write the password file", "module": "core.file.present", "check": false, "status": "changed", "changed": true, "failed": false, "duration_ms": float64(7)},
		{"time": "2026-12-01T21:00:00Z", "run": "run-1", "task_id": "run-1/4/h1/1", "task": "Install", "destiny": "redis", "module": "core.pkg.installed", "check": true, "status": "changed", "changed": true, "failed": false, "duration_ms": float64(0)},
		{"time": "2026-12-01T21:00:00Z", "run": "run-1", "task_id": "run-1/4/h1/1", "task": "Config / Write", "destiny": "redis", "module": "core.file.rendered", "check": true, "status": "failed", "changed": false, "failed": true, "duration_ms": float64(0)},
		{"time": "2026-12-01T21:00:00Z", "run": "run-1", "task_id": "run-1/4/h1/1", "task": "Apply redis", "destiny": "redis", "check": true, "status": "failed", "changed": false, "failed": true, "duration_ms": float64(0)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("entry %d %s = %v, want %v", i, k, got[i][k], v)
			}
		}
		if len(got[i]) != len(want[i]) {
			t.Errorf("entry %d has fields %v, want exactly %v", i, got[i], want[i])
		}
	}

	// The journal got the same four entries in the native protocol.
	_ = jl.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	for i := range want {
		n, err := jl.Read(buf)
		if err != nil {
			t.Fatalf("journal datagram %d: %v", i, err)
		}
		msg := string(buf[:n])
		if strings.Contains(msg, secretValue) {
			t.Fatalf("journal entry holds a secret: %q", msg)
		}
		fields := map[string]string{}
		for _, line := range strings.Split(strings.TrimSuffix(msg, "\n"), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("journal line %q is not KEY=value", line)
			}
			fields[k] = v
		}
		if fields["SYSLOG_IDENTIFIER"] != "soul" || fields["SOULSTACK_RUN"] != "run-1" || fields["SOULSTACK_STATUS"] != want[i]["status"] || fields["MESSAGE"] == "" {
			t.Errorf("journal entry %d = %v", i, fields)
		}
		if want[i]["failed"] == true && fields["PRIORITY"] != "4" {
			t.Errorf("failed task logged with priority %s, want 4 (warning)", fields["PRIORITY"])
		}
	}
}

// A journal that restarts (its socket recreated) is reconnected to.
func TestTaskLogJournalReconnects(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "journal.sock")
	listen := func() *net.UnixConn {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	jl := listen()
	l, err := OpenTaskLog(filepath.Join(dir, TaskLogFile), TaskLogOptions{Journal: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w := dispatch.Work{RunID: "r", Call: &dispatch.Call{Module: "core.test.ping"}}
	if err := l.Record(w, domain.Result{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	jl.Close()
	os.Remove(sock)
	jl = listen()
	defer jl.Close()
	if err := l.Record(w, domain.Result{Changed: true}, time.Now()); err != nil {
		t.Fatalf("after a journal restart: %v", err)
	}
	_ = jl.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := jl.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "SOULSTACK_STATUS=changed") {
		t.Fatalf("restarted journal got %q, %v", buf[:n], err)
	}
}

// The record is rotated: it never grows past its size, older entries move
// to backups.
func TestTaskLogRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TaskLogFile)
	l, err := OpenTaskLog(path, TaskLogOptions{MaxMB: 1, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w := dispatch.Work{RunID: strings.Repeat("r", 200), TaskID: "t", Task: "x", Call: &dispatch.Call{Module: "core.test.ping"}}
	for range 5000 { // ~1.5 MB
		if err := l.Record(w, domain.Result{}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 1<<20 {
		t.Fatalf("current record is %d bytes, want at most 1 MB (err %v)", fi.Size(), err)
	}
	backups, _ := filepath.Glob(filepath.Join(dir, "tasks-*.log"))
	if len(backups) == 0 {
		t.Fatal("no rotated backup")
	}
}

// A soul writes its record in its data dir.
func TestAgentOpensTaskLog(t *testing.T) {
	dir := t.TempDir()
	a, err := NewAgent(Config{KeeperURL: "https://127.0.0.1:1", SID: "s", DataDir: dir, Fingerprint: strings.Repeat("a", 64)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.record.Record(dispatch.Work{RunID: "r", Call: &dispatch.Call{Module: "core.test.ping"}}, domain.Result{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if e := readEntries(t, filepath.Join(dir, TaskLogFile)); len(e) != 1 || e[0]["module"] != "core.test.ping" {
		t.Fatalf("entries %v", e)
	}
	_ = a.record.Close()
}
