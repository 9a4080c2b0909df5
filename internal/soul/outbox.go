package soul

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/soulstack/soulstack/internal/domain"
)

// pendingResult is a finished task's result not yet handed to a keeper.
type pendingResult struct {
	RunID  string        `json:"run_id"`
	TaskID string        `json:"task_id"`
	Result domain.Result `json:"result"`
}

// outbox holds results of work finished while the soul was disconnected, in
// memory and as one file each under dir, so they survive a restart and are
// delivered once after the next welcome.
type outbox struct {
	dir string // "" keeps results in memory only
	log *slog.Logger

	mu    sync.Mutex
	items map[string]pendingResult // by task id
}

func newOutbox(dir string, log *slog.Logger) (*outbox, error) {
	o := &outbox{dir: dir, log: log, items: make(map[string]pendingResult)}
	if dir == "" {
		return o, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating outbox: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading outbox: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		var p pendingResult
		if err == nil {
			err = json.Unmarshal(b, &p)
		}
		if err != nil || p.TaskID == "" {
			log.Warn("discarding an unreadable outbox entry", "path", path, "err", err)
			os.Remove(path)
			continue
		}
		o.items[p.TaskID] = p
	}
	return o, nil
}

func (o *outbox) path(taskID string) string {
	return filepath.Join(o.dir, hex.EncodeToString([]byte(taskID))+".json")
}

// put keeps p until it is delivered. A failure to persist is logged: the
// result still waits in memory.
func (o *outbox) put(p pendingResult) {
	o.mu.Lock()
	o.items[p.TaskID] = p
	o.mu.Unlock()
	if o.dir == "" {
		return
	}
	b, err := json.Marshal(p)
	if err == nil {
		err = writeFileAtomic(o.path(p.TaskID), b, 0o600)
	}
	if err != nil {
		o.log.Warn("persisting an undelivered result", "task_id", p.TaskID, "err", err)
	}
}

// list returns the waiting results ordered by task id.
func (o *outbox) list() []pendingResult {
	o.mu.Lock()
	out := make([]pendingResult, 0, len(o.items))
	for _, p := range o.items {
		out = append(out, p)
	}
	o.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	return out
}

// remove forgets a delivered result.
func (o *outbox) remove(taskID string) {
	o.mu.Lock()
	delete(o.items, taskID)
	o.mu.Unlock()
	if o.dir == "" {
		return
	}
	if err := os.Remove(o.path(taskID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		o.log.Warn("removing a delivered result", "task_id", taskID, "err", err)
	}
}

// len is the number of waiting results.
func (o *outbox) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.items)
}
