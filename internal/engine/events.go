package engine

import (
	"context"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// Event types.
const (
	EventRun  = "run"  // the run started executing (Status running)
	EventTask = "task" // a task started: Path, Task, Hosts (its target)
	EventWave = "wave" // a wave of a task started: Path, Wave, Hosts
	EventHost = "host" // one host's result of a task, once stored: Result (a result changed by failed_when at the barrier comes again)
	EventDone = "done" // the run ended: Status, Error (always the last event)
)

// Event is one step of a run's progress, streamed to subscribers (the SSE
// endpoint). Secrets are masked in every field.
type Event struct {
	Type   string            `json:"type"`
	RunID  string            `json:"apply_id"`
	Time   time.Time         `json:"time"`
	Status string            `json:"status,omitempty"`
	Error  string            `json:"error,omitempty"`
	Path   string            `json:"path,omitempty"`
	Task   string            `json:"task,omitempty"`
	Wave   int               `json:"wave,omitempty"`
	Hosts  []string          `json:"hosts,omitempty"`
	Result *store.HostResult `json:"result,omitempty"`
}

// subscriberBuffer is how many events a subscriber may lag behind before
// it is dropped (its channel closed without the done event: it then reads
// the run's record).
const subscriberBuffer = 1024

// liveRun is the in-memory side of a run executing on this engine.
type liveRun struct {
	id     string
	cancel context.CancelCauseFunc
	done   chan struct{}
	runner *runner // set before the run starts; read after done

	mu   sync.Mutex
	subs map[chan Event]struct{}
	over bool
	// past are the run's events so far, replayed to a subscriber that
	// arrives late so it sees the run from its start.
	past []Event
}

// maxReplay bounds the events kept for late subscribers; of a larger run
// (thousands of hosts) the first maxReplay are replayed, and the rest is in
// the run's record.
const maxReplay = subscriberBuffer / 2

func newLiveRun(id string, cancel context.CancelCauseFunc) *liveRun {
	return &liveRun{id: id, cancel: cancel, done: make(chan struct{}), subs: map[chan Event]struct{}{}}
}

func (lr *liveRun) subscribe() (<-chan Event, func()) {
	ch := make(chan Event, subscriberBuffer)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.over {
		close(ch)
		return ch, func() {}
	}
	for _, ev := range lr.past {
		ch <- ev // fits: len(past) <= maxReplay < cap(ch)
	}
	lr.subs[ch] = struct{}{}
	return ch, func() {
		lr.mu.Lock()
		defer lr.mu.Unlock()
		if _, ok := lr.subs[ch]; ok {
			delete(lr.subs, ch)
			close(ch)
		}
	}
}

// publish hands ev to every subscriber without blocking; a subscriber
// whose buffer is full is dropped.
func (lr *liveRun) publish(ev Event) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if ev.Type != EventDone && len(lr.past) < maxReplay {
		lr.past = append(lr.past, ev)
	}
	for ch := range lr.subs {
		select {
		case ch <- ev:
		default:
			delete(lr.subs, ch)
			close(ch)
		}
	}
}

// finish publishes the final event, closes every subscription and marks
// the run done.
func (lr *liveRun) finish(final Event) {
	lr.mu.Lock()
	lr.over = true
	for ch := range lr.subs {
		select {
		case ch <- final:
		default:
		}
		close(ch)
		delete(lr.subs, ch)
	}
	lr.mu.Unlock()
	close(lr.done)
}
