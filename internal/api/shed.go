package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/domain"
)

// Load is the API's load shedding (issue 36): at most MaxInFlight
// authenticated /v1 requests run at once; one that cannot start within
// MaxWait is answered 503 with Retry-After instead of waiting longer, so
// that queueing adds at most MaxWait to the p99 of the requests served.
// Event streams (…/events) are long-lived and not counted. MaxInFlight 0
// turns shedding off.
type Load struct {
	MaxInFlight int
	MaxWait     time.Duration
}

// shedder admits requests into a bounded number of slots.
type shedder struct {
	slots   chan struct{}
	wait    time.Duration
	retry   string // Retry-After, in seconds
	shedded prometheus.Counter
	running prometheus.Gauge
}

func newShedder(l Load, reg prometheus.Registerer) (*shedder, error) {
	if l.MaxInFlight <= 0 {
		return nil, nil
	}
	sh := &shedder{
		slots: make(chan struct{}, l.MaxInFlight),
		wait:  l.MaxWait,
		retry: strconv.Itoa(max(1, int(math.Ceil(l.MaxWait.Seconds())))),
		shedded: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "soulstack", Subsystem: "api", Name: "shed_total",
			Help: "Operator API requests answered 503 because api.max_in_flight requests ran and none ended within api.max_wait.",
		}),
	}
	sh.running = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "soulstack", Subsystem: "api", Name: "in_flight",
		Help: "Operator API requests running now (at most api.max_in_flight).",
	})
	for _, c := range []prometheus.Collector{sh.shedded, sh.running} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the load shedding metrics: %w", err)
		}
	}
	return sh, nil
}

// wrap sheds h's requests beyond the bound; a nil shedder and event
// streams pass through.
func (sh *shedder) wrap(s *Server, pattern string, h http.Handler) http.Handler {
	if sh == nil || strings.HasSuffix(pattern, "/events") {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sh.acquire(r) {
			sh.shedded.Inc()
			w.Header().Set("Retry-After", sh.retry)
			s.writeError(w, r, domain.Errorf(domain.CodeUnavailable,
				"the keeper is busy (%d API requests in flight and none ended within %s): retry after %ss",
				cap(sh.slots), sh.wait, sh.retry))
			return
		}
		sh.running.Inc()
		defer func() {
			sh.running.Dec()
			<-sh.slots
		}()
		h.ServeHTTP(w, r)
	})
}

// acquire takes a slot, waiting at most sh.wait (or until the client
// gives up).
func (sh *shedder) acquire(r *http.Request) bool {
	select {
	case sh.slots <- struct{}{}:
		return true
	default:
	}
	if sh.wait <= 0 {
		return false
	}
	t := time.NewTimer(sh.wait)
	defer t.Stop()
	select {
	case sh.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-r.Context().Done():
		return false
	}
}
