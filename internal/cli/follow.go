package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/domain"
)

// Timings of follow; tests may shorten them.
var (
	pollEvery      = 500 * time.Millisecond // refetch the run at least this often
	maxUnavailable = 20                     // consecutive failed fetches before giving up
)

// observer receives what follow learns about a run, from one goroutine.
type observer interface {
	record(runView) // a fetch of the run record
	event(runEvent) // a live event
}

// follow waits until run id ends, telling obs (which may be nil) every
// fetched state of the run and every live event, and returns the final
// record. It refetches the run (GET /v1/runs/{id}) when the run's event
// stream (GET /v1/runs/{id}/events) says it ended, and at least every
// pollEvery — so it works, with less detail, where the stream is missing
// or cut. A Keeper briefly unreachable is waited for.
func follow(ctx context.Context, cl *apiclient.Client, id string, obs observer) (raw[runView], error) {
	ctx, cancel := context.WithCancel(ctx)
	events := make(chan runEvent, 256)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(events)
		watchEvents(ctx, cl, id, events)
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	failures := 0
	var last raw[runView]
	evs := (<-chan runEvent)(events)
	for fetch := true; ; {
		if fetch {
			fetch = false
			r, err := getRun(ctx, cl, id)
			switch {
			case err == nil:
				failures = 0
				last = r
				if obs != nil {
					obs.record(r.View)
				}
				if terminalRun(r.View.Status) {
					return r, nil
				}
			case ctx.Err() != nil:
				return last, ctx.Err()
			case domain.ErrorCode(err) == domain.CodeUnavailable && failures < maxUnavailable:
				failures++
			default:
				return last, err
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case ev, ok := <-evs:
			if !ok {
				evs = nil // the stream is gone for good: poll
				continue
			}
			if obs != nil && ev.Type != evDone {
				obs.event(ev)
			}
			if ev.Type == evDone {
				fetch = true
			}
		case <-tick.C:
			fetch = true
		}
	}
}

// watchEvents reads the run's Server-Sent Events into out, reconnecting
// when the stream ends early, until ctx is done, the run's done event came,
// or the route does not exist (then follow polls alone).
func watchEvents(ctx context.Context, cl *apiclient.Client, id string, out chan<- runEvent) {
	path := "/v1/runs/" + url.PathEscape(id) + "/events"
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		body, err := cl.OpenStream(ctx, path, nil)
		if err != nil {
			var ae *apiclient.APIError
			if errors.As(err, &ae) && ae.Status < 500 {
				return // no such route, or no such run: polling will tell
			}
		} else {
			backoff = 200 * time.Millisecond
			done := readEvents(ctx, body, out)
			body.Close()
			if done {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// readEvents decodes an SSE stream into out (the JSON of each event's data
// lines; the event name stands in for a missing type) and reports whether
// the done event came.
func readEvents(ctx context.Context, body io.Reader, out chan<- runEvent) bool {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var name string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				var ev runEvent
				if json.Unmarshal([]byte(strings.Join(data, "\n")), &ev) == nil {
					if ev.Type == "" {
						ev.Type = name
					}
					select {
					case out <- ev:
					case <-ctx.Done():
						return false
					}
					if ev.Type == evDone {
						return true
					}
				}
			}
			name, data = "", nil
		case strings.HasPrefix(line, ":"): // comment: keep-alive
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return false
}
