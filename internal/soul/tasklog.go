package soul

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
)

// TaskLogFile is the name of the soul's local record in its data dir.
const TaskLogFile = "tasks.log"

// Defaults of TaskLogOptions.
const (
	DefaultTaskLogMaxMB      = 10
	DefaultTaskLogMaxBackups = 5
	// JournalSocket is systemd-journald's native protocol socket.
	JournalSocket = "/run/systemd/journal/socket"
)

// TaskLogOptions configure a TaskLog.
type TaskLogOptions struct {
	// MaxMB is the size at which the file is rotated; MaxBackups how
	// many rotated files are kept (0: the defaults).
	MaxMB, MaxBackups int
	// Journal is the journald socket to also send each entry to; "" sends
	// none. OpenTaskLog's callers pass JournalSocket when systemd is PID 1
	// (see SystemdBooted).
	Journal string
}

// TaskLog is the soul's own record of every task it ran (SPEC §10.3):
// one JSON line per task in a rotated file of its data dir, and the same
// entry in the journal on systemd hosts, so the host keeps its own record
// of what root did. An entry holds the time, the run, the task, the
// module and how it ended; never params, messages or output, which may
// carry secret values.
type TaskLog struct {
	mu      sync.Mutex
	file    *lumberjack.Logger
	journal *net.UnixConn // nil while not connected
	jpath   string        // the journal socket; "" for none
}

// SystemdBooted reports whether systemd is PID 1 (sd_booted(3)).
func SystemdBooted() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// OpenTaskLog opens (creating, mode 0600) the record at path. A journal
// that cannot be reached is not an error: the file is the record.
func OpenTaskLog(path string, o TaskLogOptions) (*TaskLog, error) {
	if o.MaxMB <= 0 {
		o.MaxMB = DefaultTaskLogMaxMB
	}
	if o.MaxBackups <= 0 {
		o.MaxBackups = DefaultTaskLogMaxBackups
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("task log: %w", err)
	}
	l := &TaskLog{file: &lumberjack.Logger{Filename: path, MaxSize: o.MaxMB, MaxBackups: o.MaxBackups, LocalTime: false}, jpath: o.Journal}
	_ = l.dialJournal()
	return l, nil
}

// dialJournal (re)connects to the journal socket; the caller holds l.mu
// or owns l alone.
func (l *TaskLog) dialJournal() error {
	if l.jpath == "" {
		return nil
	}
	if l.journal != nil {
		_ = l.journal.Close()
		l.journal = nil
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: l.jpath, Net: "unixgram"})
	if err != nil {
		return err
	}
	l.journal = c
	return nil
}

// toJournal sends one entry, reconnecting once (journald restarts).
func (l *TaskLog) toJournal(msg []byte) error {
	if l.jpath == "" {
		return nil
	}
	write := func() error {
		// A stuck journal never holds up the result of a task.
		_ = l.journal.SetWriteDeadline(time.Now().Add(journalWriteTimeout))
		_, err := l.journal.Write(msg)
		return err
	}
	if l.journal != nil && write() == nil {
		return nil
	}
	if err := l.dialJournal(); err != nil {
		return err
	}
	return write()
}

// journalWriteTimeout bounds one datagram to the journal.
const journalWriteTimeout = time.Second

// Close closes the file and the journal connection.
func (l *TaskLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.journal != nil {
		_ = l.journal.Close()
		l.journal = nil
	}
	l.jpath = ""
	return l.file.Close()
}

// taskEntry is one line of the record.
type taskEntry struct {
	Time       string `json:"time"`
	Run        string `json:"run,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	Task       string `json:"task,omitempty"`
	Destiny    string `json:"destiny,omitempty"`
	Module     string `json:"module,omitempty"`
	Check      bool   `json:"check"`
	Status     string `json:"status"`
	Changed    bool   `json:"changed"`
	Failed     bool   `json:"failed"`
	DurationMS int64  `json:"duration_ms"`
}

// Record appends the entries of one finished piece of work: one for a
// module call, and for a destiny bundle one per task it ran (blocks
// flattened) plus one for the bundle. Errors are reported, never fatal:
// the work already ran.
func (l *TaskLog) Record(w dispatch.Work, r domain.Result, end time.Time) error {
	base := taskEntry{Time: end.UTC().Format(time.RFC3339Nano), Run: w.RunID, TaskID: w.TaskID, Task: w.Task, Check: w.Check}
	var entries []taskEntry
	switch {
	case w.Call != nil:
		e := base
		e.Module = w.Call.Module
		entries = append(entries, withResult(e, r))
	case w.Bundle != nil:
		for _, t := range flattenTasks("", r.Tasks) {
			e := base
			e.Destiny, e.Task, e.Module = w.Bundle.Destiny, t.Name, t.Module
			entries = append(entries, withResult(e, t.Result))
		}
		e := base
		e.Destiny = w.Bundle.Destiny
		entries = append(entries, withResult(e, r))
	default:
		entries = append(entries, withResult(base, r))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []string
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if _, err := l.file.Write(append(b, '\n')); err != nil {
			errs = append(errs, err.Error())
		}
		if err := l.toJournal(journalMessage(e)); err != nil {
			errs = append(errs, "journal: "+err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("task log: %s", strings.Join(errs, "; "))
	}
	return nil
}

func withResult(e taskEntry, r domain.Result) taskEntry {
	e.Status, e.Changed, e.Failed, e.DurationMS = string(r.Status()), r.Changed, r.Failed, r.DurationMS
	return e
}

// flattenTasks lists a destiny's task results with block children inline.
func flattenTasks(prefix string, ts []domain.TaskResult) []domain.TaskResult {
	var out []domain.TaskResult
	for _, t := range ts {
		if prefix != "" {
			t.Name = prefix + " / " + t.Name
		}
		if t.Module == "" && len(t.Tasks) > 0 {
			out = append(out, flattenTasks(t.Name, t.Tasks)...)
			continue
		}
		out = append(out, t)
	}
	return out
}

// journalMessage encodes e in journald's native protocol: KEY=value lines,
// or KEY\n<64-bit little-endian length><value>\n for a value with a
// newline (systemd.journal-fields(7), "Native protocol").
func journalMessage(e taskEntry) []byte {
	what := e.Task
	if what == "" {
		what = e.Destiny
	}
	prio := "6"
	if e.Failed {
		prio = "4"
	}
	mode := ""
	if e.Check {
		mode = " (check mode)"
	}
	fields := [][2]string{
		{"MESSAGE", fmt.Sprintf("task %q module %s run %s: %s%s", what, e.Module, e.Run, e.Status, mode)},
		{"PRIORITY", prio},
		{"SYSLOG_IDENTIFIER", "soul"},
		{"SOULSTACK_RUN", e.Run},
		{"SOULSTACK_TASK_ID", e.TaskID},
		{"SOULSTACK_TASK", e.Task},
		{"SOULSTACK_DESTINY", e.Destiny},
		{"SOULSTACK_MODULE", e.Module},
		{"SOULSTACK_STATUS", e.Status},
		{"SOULSTACK_CHANGED", fmt.Sprint(e.Changed)},
		{"SOULSTACK_FAILED", fmt.Sprint(e.Failed)},
		{"SOULSTACK_CHECK", fmt.Sprint(e.Check)},
	}
	var b bytes.Buffer
	for _, f := range fields {
		if f[1] == "" {
			continue
		}
		if !strings.Contains(f[1], "\n") {
			b.WriteString(f[0] + "=" + f[1] + "\n")
			continue
		}
		b.WriteString(f[0] + "\n")
		_ = binary.Write(&b, binary.LittleEndian, uint64(len(f[1])))
		b.WriteString(f[1] + "\n")
	}
	return b.Bytes()
}
