package ui_test

import (
	"bufio"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/ui"
)

// fakeEngine stands in for the run engine's Subscribe: the test publishes
// events and ends runs.
type fakeEngine struct {
	mu   sync.Mutex
	subs map[string][]chan string
}

func (f *fakeEngine) Subscribe(applyID string) (<-chan string, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[string][]chan string{}
	}
	ch := make(chan string, 16)
	f.subs[applyID] = append(f.subs[applyID], ch)
	return ch, func() {}
}

func (f *fakeEngine) subscribers(applyID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs[applyID])
}

func (f *fakeEngine) publish(applyID, ev string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs[applyID] {
		ch <- ev
	}
}

func (f *fakeEngine) end(applyID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs[applyID] {
		close(ch)
	}
	delete(f.subs, applyID)
}

// sse reads the event names of a Server-Sent Events response.
type sse struct {
	t   *testing.T
	res *http.Response
	sc  *bufio.Scanner
}

func (e *env) openSSE(c *http.Client, path string) *sse {
	e.t.Helper()
	res, err := c.Get(e.srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		e.t.Fatalf("GET %s: %d %q", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return &sse{t: e.t, res: res, sc: bufio.NewScanner(res.Body)}
}

// next returns the next event's name, or "EOF".
func (s *sse) next() string {
	s.t.Helper()
	for s.sc.Scan() {
		if name, ok := strings.CutPrefix(s.sc.Text(), "event: "); ok {
			return name
		}
	}
	return "EOF"
}

func TestRunEventsWithoutEngineSaysPoll(t *testing.T) {
	e := newEnv(t)
	c := e.session()
	if got := e.openSSE(c, "/ui/runs/"+runQueue+"/events").next(); got != "poll" {
		t.Errorf("running run, no engine: %q, want poll", got)
	}
	if got := e.openSSE(c, "/ui/runs/"+runRestart+"/events").next(); got != "done" {
		t.Errorf("finished run: %q, want done", got)
	}
	if status, _ := e.get(c, "/ui/runs/ghost/events"); status != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", status)
	}
}

func TestRunEventsFollowEngine(t *testing.T) {
	eng := &fakeEngine{}
	e := newEnv(t, func(c *ui.Config) { c.Events = ui.Subscriber(eng.Subscribe) })
	c := e.session()
	if body := e.page(c, "/ui/runs/"+runQueue); !strings.Contains(body, `data-sse="/ui/runs/`+runQueue+`/events"`) {
		t.Fatal("run page with an engine does not offer the event stream")
	}

	s := e.openSSE(c, "/ui/runs/"+runQueue+"/events")
	if got := s.next(); got != "hello" {
		t.Fatalf("first event %q, want hello", got)
	}
	eng.publish(runQueue, "host")
	if got := s.next(); got != "change" {
		t.Fatalf("after progress: %q, want change", got)
	}
	if err := e.st.CommitRun(t.Context(), runQueue, map[string]any{}, store.Snapshot{}, e.now); err != nil {
		t.Fatal(err)
	}
	eng.publish(runQueue, "done")
	eng.end(runQueue)
	var got []string
	for ev := s.next(); ev != "EOF"; ev = s.next() {
		got = append(got, ev)
	}
	if len(got) == 0 || got[len(got)-1] != "done" {
		t.Fatalf("after the run ended: %v, want … done", got)
	}
}

// A run the engine does not have (executing on another keeper) makes the
// page fall back to polling.
func TestRunEventsOnOtherKeeperSaysPoll(t *testing.T) {
	eng := &fakeEngine{}
	e := newEnv(t, func(c *ui.Config) { c.Events = ui.Subscriber(eng.Subscribe) })
	s := e.openSSE(e.session(), "/ui/runs/"+runQueue+"/events")
	if got := s.next(); got != "hello" {
		t.Fatalf("first event %q, want hello", got)
	}
	waitFor(t, func() bool { return eng.subscribers(runQueue) == 1 })
	eng.end(runQueue)
	if got := s.next(); got != "poll" {
		t.Fatalf("subscription closed, run unfinished: %q, want poll", got)
	}
}

func TestSubscriberCoalescesAndStops(t *testing.T) {
	src := make(chan int)
	var unsubscribed sync.WaitGroup
	unsubscribed.Add(1)
	ev := ui.Subscriber(func(id string) (<-chan int, func()) {
		if id != "r1" {
			t.Errorf("subscribed to %q", id)
		}
		return src, unsubscribed.Done
	})
	changes, stop := ev.Watch("r1")
	for i := range 3 {
		src <- i // never blocks on a slow reader: signals coalesce
	}
	if _, ok := <-changes; !ok {
		t.Fatal("no change signal")
	}
	stop()
	stop() // idempotent
	unsubscribed.Wait()
	for range changes { // closed once the forwarder has exited
	}

	src2 := make(chan int)
	changes2, stop2 := ui.Subscriber(func(string) (<-chan int, func()) { return src2, func() {} }).Watch("r2")
	defer stop2()
	close(src2)
	select {
	case _, ok := <-changes2:
		if ok {
			t.Fatal("signal without an event")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("changes not closed after the subscription ended")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
