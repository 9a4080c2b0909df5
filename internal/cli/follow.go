package cli

import (
	"bufio"
	"context"
	"errors"
	"net/http"
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
	minFetchGap    = 50 * time.Millisecond  // coalesce bursts of events
	maxUnavailable = 20                     // consecutive failed fetches before giving up
)

// follow waits until run id ends, calling show with every fetched state of
// the run (show may be nil), and returns the final one. It refetches the
// run (GET /v1/runs/{id}) whenever the run's event stream
// (GET /v1/runs/{id}/events) says something happened, and at least every
// pollEvery — so it works, more slowly, where the stream is missing or
// cut. A Keeper briefly unreachable is waited for.
func follow(ctx context.Context, cl *apiclient.Client, id string, show func(raw[runView])) (raw[runView], error) {
	ctx, cancel := context.WithCancel(ctx)
	kick := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchEvents(ctx, cl, id, kick)
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	failures := 0
	var last raw[runView]
	for {
		r, err := getRun(ctx, cl, id)
		switch {
		case err == nil:
			failures = 0
			last = r
			if show != nil {
				show(r)
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
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-kick:
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(minFetchGap):
		}
	}
}

// watchEvents reads the run's Server-Sent Events and signals kick after
// every event, reconnecting when the stream ends, until ctx is done or the
// route does not exist (then follow polls alone).
func watchEvents(ctx context.Context, cl *apiclient.Client, id string, kick chan<- struct{}) {
	path := "/v1/runs/" + url.PathEscape(id) + "/events"
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		body, err := cl.OpenStream(ctx, path, nil)
		if err != nil {
			var ae *apiclient.APIError
			if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed) {
				return
			}
		} else {
			backoff = 200 * time.Millisecond
			readEvents(body, kick)
			body.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// readEvents signals kick at the end of each event of an SSE stream. The
// events' content is not needed: the run record is the source of truth.
func readEvents(body interface{ Read([]byte) (int, error) }, kick chan<- struct{}) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	pending := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if pending {
				select {
				case kick <- struct{}{}:
				default:
				}
			}
			pending = false
		case strings.HasPrefix(line, ":"): // comment (keep-alive)
		default:
			pending = true
		}
	}
}
