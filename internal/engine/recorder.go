package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// Batching of a run's host results (see recorder).
const (
	recordEvery = 50 * time.Millisecond
	recordBatch = 256
)

// rowKey is what RecordResults upserts by within a run.
type rowKey struct {
	seq int
	sid string
}

// recorder stores a run's host results as hosts answer, not once per wave:
// a keeper that dies mid-wave keeps the answers it got, and a long wave
// shows progress live. Rows are written in batches by one goroutine owned
// by the run — a row waits at most recordEvery, or less once recordBatch
// rows wait — so a 10,000-host wave costs tens of transactions, not
// 10,000. A row queued again for the same task and host (the result after
// changed_when/failed_when) replaces the waiting one; once written it is
// upserted, so the last row wins either way. Each written batch is
// announced (emit) after the write, so a reader refreshing from the store
// on an event sees the rows.
type recorder struct {
	st    store.Store
	log   *slog.Logger
	ctx   context.Context // not cancelled with the run: results are facts
	runID string
	emit  func([]store.HostResult)
	// giveUp ends the wait of a write for an unavailable store.
	giveUp <-chan struct{}
	every  time.Duration
	batch  int

	mu      sync.Mutex
	pending []store.HostResult
	index   map[rowKey]int

	writeMu sync.Mutex // one write at a time, in the order rows were taken

	wake chan struct{} // rows are waiting
	full chan struct{} // a batch is full
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newRecorder(ctx context.Context, st store.Store, log *slog.Logger, runID string, emit func([]store.HostResult), giveUp <-chan struct{}) *recorder {
	return &recorder{
		st: st, log: log, ctx: context.WithoutCancel(ctx), runID: runID, emit: emit, giveUp: giveUp,
		every: recordEvery, batch: recordBatch, index: map[rowKey]int{},
		wake: make(chan struct{}, 1), full: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// start runs the writing goroutine; close stops it.
func (rc *recorder) start() { go rc.loop() }

func (rc *recorder) loop() {
	defer close(rc.done)
	for {
		select {
		case <-rc.stop:
			rc.flush()
			return
		case <-rc.wake:
		}
		// Gather what arrives close together, up to a full batch.
		t := time.NewTimer(rc.every)
		select {
		case <-t.C:
		case <-rc.full:
		case <-rc.stop:
			t.Stop()
			rc.flush()
			return
		}
		t.Stop()
		rc.flush()
	}
}

// add queues rows for writing.
func (rc *recorder) add(rows ...store.HostResult) {
	if len(rows) == 0 {
		return
	}
	rc.mu.Lock()
	for _, row := range rows {
		k := rowKey{row.Seq, row.SID}
		if i, ok := rc.index[k]; ok {
			rc.pending[i] = row
			continue
		}
		rc.index[k] = len(rc.pending)
		rc.pending = append(rc.pending, row)
	}
	n := len(rc.pending)
	rc.mu.Unlock()
	signal(rc.wake)
	if n >= rc.batch {
		signal(rc.full)
	}
}

// flush writes every row queued so far and returns once they are stored
// (the per-task barrier and the end of the run call it: what the run
// decides on is in the store before anything depends on it).
func (rc *recorder) flush() {
	rc.writeMu.Lock()
	defer rc.writeMu.Unlock()
	rc.mu.Lock()
	rows := rc.pending
	rc.pending = nil
	clear(rc.index)
	rc.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	// The run waits here for a store that is briefly away: what it decides
	// on next must be stored first.
	write := func() error { return rc.st.RecordResults(rc.ctx, rows) }
	if err := storeRetry(rc.giveUp, rc.log.With("apply_id", rc.runID), "recording host results", write); err != nil {
		rc.log.ErrorContext(rc.ctx, "recording host results failed", "apply_id", rc.runID, "rows", len(rows), "err", err)
	}
	rc.emit(rows)
}

// close writes what is left and stops the goroutine.
func (rc *recorder) close() {
	rc.once.Do(func() { close(rc.stop) })
	<-rc.done
}

// signal wakes the receiver of a one-slot channel without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
