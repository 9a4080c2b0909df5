package notify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/rules"
	"github.com/soulstack/soulstack/internal/secrets"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
)

type received struct {
	mu     sync.Mutex
	bodies []string
	sigs   []string
	ts     []string
}

func setup(t *testing.T) (store.Store, *secrets.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := secrets.LoadOrCreateKey(filepath.Join(dir, "secrets.key"))
	if err != nil {
		t.Fatal(err)
	}
	sec, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	return st, sec
}

func TestWebhookSignedMaskedAndDelivered(t *testing.T) {
	ctx := context.Background()
	st, sec := setup(t)
	var rcv received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rcv.mu.Lock()
		rcv.bodies, rcv.sigs, rcv.ts = append(rcv.bodies, string(b)), append(rcv.sigs, r.Header.Get(HeaderSignature)), append(rcv.ts, r.Header.Get(HeaderTimestamp))
		rcv.mu.Unlock()
	}))
	defer srv.Close()
	if err := sec.Set(ctx, "db_password", "hunter2-secret", "a1"); err != nil {
		t.Fatal(err)
	}
	sealed, err := sec.SealEndpoint("pager", "whsec-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutEndpoint(ctx, store.NotifyEndpoint{Name: "pager", Kind: KindWebhook, URL: srv.URL, Sealed: sealed, Owner: "a1"}); err != nil {
		t.Fatal(err)
	}
	nf := New(Config{Store: st, Sealer: sec})
	err = nf.Notify(ctx, []string{"pager"}, rules.Notification{Rule: "inc/heal", Subject: "daemon down", Message: "output: hunter2-secret",
		Event: map[string]any{"sid": "h1"}, At: time.Now()}, 7)
	if err != nil {
		t.Fatal(err)
	}
	nf.DeliverDue(ctx)
	if len(rcv.bodies) != 1 {
		all, _ := st.ListDeliveries(ctx, "", 0)
		t.Fatalf("received %d: %+v", len(rcv.bodies), all)
	}
	body := rcv.bodies[0]
	if !Verify("whsec-1", rcv.ts[0], []byte(body), rcv.sigs[0]) {
		t.Fatalf("signature %q does not verify", rcv.sigs[0])
	}
	if strings.Contains(body, "hunter2-secret") || !strings.Contains(body, `"message":"output: ****"`) || !strings.Contains(body, `"rule":"inc/heal"`) {
		t.Fatalf("body = %s", body)
	}
	ds, _ := st.ListDeliveries(ctx, store.DeliveryDelivered, 0)
	if len(ds) != 1 || ds[0].FiringID != 7 || ds[0].Attempts != 1 {
		t.Fatalf("deliveries = %+v", ds)
	}
}

func TestRetriesThenDeadLetter(t *testing.T) {
	ctx := context.Background()
	st, sec := setup(t)
	var calls int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	if err := st.PutEndpoint(ctx, store.NotifyEndpoint{Name: "slack", Kind: KindSlack, URL: srv.URL, Owner: "a1", Config: map[string]any{"max_attempts": float64(3)}}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	nf := New(Config{Store: st, Sealer: sec, Now: func() time.Time { return now }, Backoff: time.Minute})
	if err := nf.Notify(ctx, []string{"slack"}, rules.Notification{Subject: "s"}, 0); err != nil {
		t.Fatal(err)
	}
	nf.DeliverDue(ctx)
	nf.DeliverDue(ctx) // not due yet: the backoff holds
	ds, _ := st.ListDeliveries(ctx, "", 0)
	if calls != 1 || ds[0].Status != store.DeliveryPending || !ds[0].NextAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("after one attempt: calls %d, %+v", calls, ds[0])
	}
	now = now.Add(time.Minute)
	nf.DeliverDue(ctx)
	now = now.Add(2 * time.Minute)
	nf.DeliverDue(ctx)
	dead, _ := st.ListDeliveries(ctx, store.DeliveryDead, 0)
	if calls != 3 || len(dead) != 1 || dead[0].Attempts != 3 || !strings.Contains(dead[0].LastError, "503") {
		t.Fatalf("calls %d, dead %+v", calls, dead)
	}
	if err := nf.Notify(ctx, []string{"nope"}, rules.Notification{}, 0); err == nil {
		t.Fatal("an unknown endpoint was accepted")
	}
}

func TestValidate(t *testing.T) {
	for _, e := range []store.NotifyEndpoint{
		{Name: "x", Kind: "pager", URL: "http://a"},
		{Name: "x", Kind: KindWebhook, URL: "ftp://a"},
		{Name: "x", Kind: KindEmail, Config: map[string]any{"smtp": "a:25"}},
	} {
		if Validate(e) == nil {
			t.Errorf("Validate(%+v) = nil", e)
		}
	}
	if err := Validate(store.NotifyEndpoint{Name: "m", Kind: KindEmail, Config: map[string]any{"smtp": "a:25", "from": "k@x", "to": []any{"o@x"}}}); err != nil {
		t.Error(err)
	}
}
