package ui

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// Events tells the UI when a run executing on this keeper makes progress,
// so an open run page refreshes at once instead of on its next poll. The
// page always re-reads the store, which is the truth; an event only says
// "look again".
type Events interface {
	// Watch returns a channel that receives a value after each progress
	// step of run applyID (several steps may coalesce into one value) and
	// is closed when the run ends or is not executing here. stop releases
	// the watch; it may be called more than once.
	Watch(applyID string) (changes <-chan struct{}, stop func())
}

// Subscriber adapts a Subscribe method of any event type — the run
// engine's (*engine.Engine).Subscribe — to Events:
//
//	ui.Config{Events: ui.Subscriber(eng.Subscribe)}
//
// The UI needs no field of the events, so it does not depend on the
// engine package.
func Subscriber[E any](subscribe func(applyID string) (<-chan E, func())) Events {
	return subscriber[E](subscribe)
}

type subscriber[E any] func(applyID string) (<-chan E, func())

// Watch forwards the subscription's events as coalesced signals. The
// forwarding goroutine ends when the subscription closes or stop is
// called; stop waits for it.
func (s subscriber[E]) Watch(applyID string) (<-chan struct{}, func()) {
	src, unsubscribe := s(applyID)
	out := make(chan struct{}, 1)
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		defer close(out)
		for {
			select {
			case _, ok := <-src:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default: // a signal is already pending
				}
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(quit)
			unsubscribe()
			<-exited
		})
	}
}

// sseKeepAlive is how often an idle event stream sends a comment, so
// proxies keep it open and a vanished client is noticed.
const sseKeepAlive = 15 * time.Second

// runEvents streams Server-Sent Events for an open run page: "change" when
// the run made progress, then "done" when it has finished, or "poll" when
// this keeper cannot follow it (no engine, or the run executes on another
// keeper) and the page should poll instead.
func (u *UI) runEvents(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	run, err := u.store.GetRun(ctx, id)
	if err != nil {
		return lookupErr(err, "run", id)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	send := func(event string) bool {
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, id); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if finished(run) {
		send("done")
		return nil
	}
	if u.cfg.Events == nil {
		send("poll")
		return nil
	}
	changes, stop := u.cfg.Events.Watch(id)
	defer stop()
	if !send("hello") {
		return nil
	}
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	for {
		select {
		case _, ok := <-changes:
			if !ok {
				// The run ended here, or was never live here.
				if run, err := u.store.GetRun(ctx, id); err == nil && finished(run) {
					send("done")
				} else {
					send("poll")
				}
				return nil
			}
			if !send("change") {
				return nil
			}
		case <-tick.C:
			// A session that ended (logout, revoked token) ends its
			// streams too.
			if _, err := u.principal(r); err != nil {
				return nil
			}
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// finished reports whether a run has reached a terminal status.
func finished(run store.Run) bool {
	switch run.Status {
	case store.RunSucceeded, store.RunFailed, store.RunAborted, store.RunCancelled:
		return true
	}
	return false
}
