package healthkeeper

import (
	"sync"
	"time"
)

// Event is a health transition as published to subscribers (SSE).
type Event struct {
	Type        string    `json:"type"` // health.transition
	Incarnation string    `json:"incarnation"`
	Check       string    `json:"check"`
	SID         string    `json:"sid"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Message     string    `json:"message"`
	Time        time.Time `json:"time"`
}

// subscriberBuffer is how many events a subscriber may lag behind; beyond,
// events to it are dropped (it can reread the current state).
const subscriberBuffer = 256

type subscriber struct {
	incarnation string
	ch          chan Event
}

// broker fans events out to subscribers without ever blocking the
// publisher.
type broker struct {
	mu   sync.Mutex
	subs map[*subscriber]bool
}

func newBroker() *broker { return &broker{subs: map[*subscriber]bool{}} }

func (b *broker) publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.incarnation != "" && s.incarnation != ev.Incarnation {
			continue
		}
		select {
		case s.ch <- ev:
		default:
		}
	}
}

// Subscribe returns the transitions of incarnation ("" = every one) from
// now on, until stop is called.
func (m *Manager) Subscribe(incarnation string) (events <-chan Event, stop func()) {
	s := &subscriber{incarnation: incarnation, ch: make(chan Event, subscriberBuffer)}
	m.events.mu.Lock()
	m.events.subs[s] = true
	m.events.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			m.events.mu.Lock()
			delete(m.events.subs, s)
			m.events.mu.Unlock()
			close(s.ch)
		})
	}
}
