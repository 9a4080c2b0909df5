package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/gateway"
	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/soul"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// realFleet is the engine over the real soul gateway with real souls
// (in-process agents running the real modules, confined to their own root
// directories) on loopback TLS.
type realFleet struct {
	t     *testing.T
	dir   string
	store *sqlite.Store
	eng   *engine.Engine
	url   string
	fp    string
	souls map[string]context.CancelFunc
	// unconfined starts souls without --root (custom modules refuse it).
	unconfined bool
	// tp, when set, is the tracer provider of the engine and the souls.
	tp trace.TracerProvider
}

type staticLoader struct{ svc *dsl.Service }

func (l staticLoader) Open(context.Context, string, string) (*dsl.Service, error) { return l.svc, nil }

func startRealFleet(t *testing.T, svc *dsl.Service) *realFleet {
	t.Helper()
	return startTracedFleet(t, svc, nil)
}

// startTracedFleet is startRealFleet with tp as the tracer provider of
// the engine and of every soul.
func startTracedFleet(t *testing.T, svc *dsl.Service, tp trace.TracerProvider) *realFleet {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keeper.db"))
	if err != nil {
		t.Fatal(err)
	}
	mat, err := tlsutil.LoadOrGenerate(filepath.Join(dir, "tls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := mat.Fingerprint()
	tlsCfg, err := mat.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Config{Store: st, KeeperID: "k1", Fingerprint: fp, HeartbeatInterval: time.Second, DefaultTimeout: 30 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	pattern, h := gw.Handler()
	mux.Handle(pattern, h)
	srv := &http.Server{Handler: mux, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second}
	runCtx, stopGW := context.WithCancel(ctx)
	gwDone, srvDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(gwDone); _ = gw.Run(runCtx) }()
	go func() {
		defer close(srvDone)
		if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	if err := st.CreateService(ctx, store.Service{Name: "app", Git: "file:///app", Ref: "main", Commit: "1111111111111111111111111111111111111111"}); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Store: st, Dispatcher: gw, Local: &dispatch.Local{}, Services: staticLoader{svc}, KeeperID: "k1", DefaultTimeout: 30 * time.Second, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	f := &realFleet{t: t, dir: dir, store: st, eng: eng, url: "https://" + ln.Addr().String(), fp: fp, souls: map[string]context.CancelFunc{}, tp: tp}
	t.Cleanup(func() {
		_ = eng.Close(context.Background())
		for _, stop := range f.souls {
			stop()
		}
		stopGW()
		<-gwDone
		_ = srv.Close()
		<-srvDone
		_ = st.Close()
	})
	return f
}

// soul starts an in-process soul joining with covens and waits until it is
// connected.
func (f *realFleet) soul(sid string, covens ...string) string {
	f.t.Helper()
	secret, err := jointoken.NewSecret()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.CreateJoinToken(context.Background(), store.JoinToken{
		ID: "jt-" + sid, SecretHash: jointoken.Hash(secret), Covens: covens, ExpiresAt: time.Now().Add(time.Hour), CreatedBy: "test",
	}); err != nil {
		f.t.Fatal(err)
	}
	root := filepath.Join(f.dir, "roots", sid)
	if err := os.MkdirAll(root, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if f.unconfined {
		root = ""
	}
	a, err := soul.NewAgent(soul.Config{
		KeeperURL: f.url, SID: sid, DataDir: filepath.Join(f.dir, "souls", sid), JoinToken: jointoken.Encode(secret, f.fp),
		Root: root, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Facts:          func() (map[string]any, error) { return map[string]any{"os": map[string]any{"family": "debian"}}, nil },
		TracerProvider: f.tp,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	f.souls[sid] = func() { cancel(); <-done }
	f.waitStatus(sid, store.SoulConnected)
	return root
}

func (f *realFleet) waitStatus(sid, status string) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s, err := f.store.GetSoul(context.Background(), sid); err == nil && s.Status == status {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.t.Fatalf("soul %s never became %s", sid, status)
}

func (f *realFleet) wait(id string) store.Run {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := f.eng.Wait(ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return run
}

func (f *realFleet) runScenario(name string, input map[string]any) store.Run {
	f.t.Helper()
	id, err := f.eng.StartRun(context.Background(), "app-prod", name, input, false, "")
	if err != nil {
		f.t.Fatal(err)
	}
	return f.wait(id)
}

// TestRealSouls drives real souls through the engine: create writes files
// through real modules and commits; the re-run changes nothing; a scenario
// failing on one host locks the incarnation and commits nothing; a soul
// that is gone is unreachable at once.
func TestRealSouls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gateway and real souls")
	}
	svc := loadService(t, map[string]string{
		"scenario/create/main.yml": `
input:
  motd: {type: string, default: "managed by soul stack"}
state_changes:
  sets: {version: "${ input.motd }"}
tasks:
  - name: config dir
    module: core.file.directory
    params: {path: /etc/app, mode: "0755"}
  - name: install app
    register: app
    apply:
      destiny: app
      input: {motd: "${ input.motd }", sid: "${ soulprint.self.sid }"}
`,
		"destiny/app/main.yml": `
input:
  motd: {type: string, required: true}
  sid: {type: string, required: true}
tasks:
  - name: app.conf
    module: core.file.rendered
    register: conf
    params: {path: /etc/app/app.conf, template: templates/app.conf.tmpl, mode: "0644"}
output:
  changed: "${ register.conf.changed }"
`,
		"destiny/app/templates/app.conf.tmpl": "motd={{ .input.motd }}\nhost={{ .input.sid }}\n",
		"scenario/break/main.yml": `
state_changes:
  sets: {version: broken}
tasks:
  - name: fail on b
    module: core.test.fail
    when: soulprint.self.sid == "b"
    params: {message: "b is broken"}
  - name: never
    module: core.file.present
    params: {path: /etc/app/never, content: x}
`,
	})
	f := startRealFleet(t, svc)
	roots := map[string]string{"a": f.soul("a", "prod"), "b": f.soul("b", "prod")}
	f.soul("c", "stage")
	ctx := context.Background()

	id, err := f.eng.CreateIncarnation(ctx, engine.CreateRequest{Name: "app-prod", Service: "app", Covens: []string{"prod"}, Input: map[string]any{"motd": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if run := f.wait(id); run.Status != store.RunSucceeded {
		t.Fatalf("create %s: %s", run.Status, run.Error)
	}
	inc, _ := f.store.GetIncarnation(ctx, "app-prod")
	if inc.Status != store.IncarnationReady || inc.State["version"] != "hello" || len(inc.Members) != 2 {
		t.Fatalf("incarnation %+v", inc)
	}
	for sid, root := range roots {
		b, err := os.ReadFile(filepath.Join(root, "etc/app/app.conf"))
		if want := fmt.Sprintf("motd=hello\nhost=%s\n", sid); err != nil || string(b) != want {
			t.Errorf("%s app.conf = %q %v, want %q", sid, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "roots", "c", "etc/app")); !os.IsNotExist(err) {
		t.Errorf("the stage soul was touched: %v", err)
	}

	// The re-run converges: nothing changes anywhere.
	run := f.runScenario("create", map[string]any{"motd": "hello"})
	if run.Status != store.RunSucceeded {
		t.Fatalf("re-run %s: %s", run.Status, run.Error)
	}
	rs, _ := f.store.ListResults(ctx, run.ID)
	for _, r := range rs {
		if r.Changed || r.Status != "ok" {
			t.Errorf("re-run changed %s on %s: %s %q", r.TaskName, r.SID, r.Status, r.Msg)
		}
	}

	// A failure on one host: error_locked, state and history unchanged,
	// nothing after the failing task ran.
	histBefore, _ := f.store.ListHistory(ctx, "app-prod", 0)
	run = f.runScenario("break", nil)
	if run.Status != store.RunFailed {
		t.Fatalf("break run %s", run.Status)
	}
	inc, _ = f.store.GetIncarnation(ctx, "app-prod")
	histAfter, _ := f.store.ListHistory(ctx, "app-prod", 0)
	if inc.Status != store.IncarnationErrorLocked || inc.State["version"] != "hello" || len(histAfter) != len(histBefore) {
		t.Errorf("after the failure: %s %v, history %d → %d", inc.Status, inc.State, len(histBefore), len(histAfter))
	}
	if _, err := os.Stat(filepath.Join(roots["a"], "etc/app/never")); !os.IsNotExist(err) {
		t.Error("a task after the failure ran")
	}
	if err := f.store.Unlock(ctx, "app-prod"); err != nil {
		t.Fatal(err)
	}

	// A soul that is gone is unreachable at once, not after a timeout.
	f.souls["b"]()
	delete(f.souls, "b")
	f.waitStatus("b", store.SoulDisconnected)
	start := time.Now()
	run = f.runScenario("create", map[string]any{"motd": "hello"})
	if run.Status != store.RunFailed || time.Since(start) > 10*time.Second {
		t.Errorf("run with b gone: %s after %s: %s", run.Status, time.Since(start), run.Error)
	}
	rs, _ = f.store.ListResults(ctx, run.ID)
	if r := rowsOf(rs, "0")["b"]; r.Status != "unreachable" {
		t.Errorf("b = %s, want unreachable", r.Status)
	}
}
