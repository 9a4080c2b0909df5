package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/gateway"
	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// soulBin is the soul binary built from ./cmd/soul by TestMain.
var soulBin string

func TestMain(m *testing.M) {
	_, bins, cleanup, err := testutil.BuildBinaries("github.com/soulstack/soulstack/cmd/soul")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	soulBin = bins["soul"]
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// keeper is a minimal keeper assembled from the gateway, a SQLite store and
// a TLS HTTP/2 server on loopback.
type keeper struct {
	t      *testing.T
	dir    string
	addr   string
	url    string
	fp     string
	store  *sqlite.Store
	gw     *gateway.Gateway
	logs   *testutil.Buffer
	cancel context.CancelFunc
	wg     sync.WaitGroup
	srv    *http.Server
	once   sync.Once
}

type keeperOpts struct {
	addr         string        // "" = 127.0.0.1:0
	heartbeat    time.Duration // 0 = 1s
	fanOut       int
	onLateResult func(sid, runID, taskID string, r domain.Result)
	quiet        bool // log warnings only (benchmarks)
	maxPending   int
	// wrap, when set, wraps the store the gateway uses (tests interleave
	// other keepers' and Archons' writes with its reads).
	wrap func(store.Store) store.Store
	// hello abuse bounds and the soul message limit (0 = defaults)
	helloBurst     int
	helloRefill    time.Duration
	helloWindow    time.Duration
	maxSoulMessage int
	// version is the keeper's version ("" = the build's).
	version string
	// noLean serves the Connect route only (no ALPN soulstack/1).
	noLean bool
	// the send bound (0 = defaults)
	sendTimeout time.Duration
	sendRate    int
}

// startKeeper starts a keeper whose state (database, TLS material) lives
// in dir, so a second call on the same dir is the same keeper restarted.
func startKeeper(t testing.TB, dir string, o keeperOpts) *keeper {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keeper.db"))
	if err != nil {
		t.Fatalf("opening store: %v", err)
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
	if o.addr == "" {
		o.addr = "127.0.0.1:0"
	}
	if o.heartbeat == 0 {
		o.heartbeat = time.Second
	}
	var ln net.Listener
	for i := 0; ; i++ { // a restarted keeper may wait for its old port
		if ln, err = net.Listen("tcp", o.addr); err == nil || i == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	level := slog.LevelDebug
	if o.quiet {
		level = slog.LevelWarn
	}
	k := &keeper{dir: dir, addr: ln.Addr().String(), fp: fp, store: st, logs: logs}
	k.url = "https://" + k.addr
	var gst store.Store = st
	if o.wrap != nil {
		gst = o.wrap(st)
	}
	k.gw = gateway.New(gateway.Config{
		Store: gst, KeeperID: "keeper-1", Fingerprint: fp, FanOut: o.fanOut,
		Logger:            slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level})),
		HeartbeatInterval: o.heartbeat,
		OnLateResult:      o.onLateResult,
		MaxPending:        o.maxPending,
		HelloBurst:        o.helloBurst, HelloRefill: o.helloRefill, HelloAuditWindow: o.helloWindow,
		MaxSoulMessageBytes: o.maxSoulMessage,
		Version:             o.version,
		SendTimeout:         o.sendTimeout, SendRate: o.sendRate,
	})
	mux := http.NewServeMux()
	pattern, h := k.gw.Handler()
	mux.Handle(pattern, h)
	k.srv = &http.Server{Handler: mux, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.NewTextHandler(logs, nil), slog.LevelWarn)}
	if !o.noLean {
		k.gw.EnableLean(k.srv, tlsCfg)
	}
	runCtx, cancel := context.WithCancel(ctx)
	k.cancel = cancel
	k.wg.Add(2)
	go func() {
		defer k.wg.Done()
		if err := k.gw.Run(runCtx); err != nil {
			fmt.Fprintln(logs, "gateway run:", err)
		}
	}()
	go func() {
		defer k.wg.Done()
		if err := k.srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(logs, "serve:", err)
		}
	}()
	t.Cleanup(func() {
		k.stop()
		if t.Failed() {
			t.Logf("keeper %s logs:\n%s", k.addr, logs)
		}
	})
	// A raw stream (dialRaw) does not retry "keeper is starting" as a soul
	// does: return once the gateway accepts streams.
	if o.wrap == nil {
		select {
		case <-k.gw.Ready():
		case <-time.After(30 * time.Second):
			t.Fatalf("the gateway did not become ready in 30 s; logs:\n%s", logs)
		}
	}
	return k
}

// stop stops the gateway (closing the streams), the server and the store.
func (k *keeper) stop() {
	k.once.Do(func() {
		k.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = k.srv.Shutdown(ctx)
		k.wg.Wait()
		k.store.Close()
	})
}

// joinToken creates a join token with covens and returns its string.
func (k *keeper) joinToken(t testing.TB, covens ...string) string {
	t.Helper()
	secret, err := jointoken.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	err = k.store.CreateJoinToken(context.Background(), store.JoinToken{
		ID: fmt.Sprintf("jt-%d", time.Now().UnixNano()), SecretHash: jointoken.Hash(secret), Covens: covens,
		ExpiresAt: time.Now().Add(time.Hour), CreatedBy: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	return jointoken.Encode(secret, k.fp)
}

func (k *keeper) soul(t testing.TB, sid string) store.Soul {
	t.Helper()
	s, err := k.store.GetSoul(context.Background(), sid)
	if err != nil {
		t.Fatalf("GetSoul(%s): %v", sid, err)
	}
	return s
}

func (k *keeper) waitStatus(t testing.TB, sid, status string) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		s, err := k.store.GetSoul(context.Background(), sid)
		return err == nil && s.Status == status
	}, "soul %s %s", sid, status)
}

func (k *keeper) waitConnected(t testing.TB, sids ...string) {
	t.Helper()
	for _, sid := range sids {
		testutil.WaitFor(t, 10*time.Second, func() bool { return k.gw.Connected(sid) }, "soul %s connected", sid)
		k.waitStatus(t, sid, store.SoulConnected)
	}
}

// startSoul runs `soul run` against k with SID sid and data dir dir (a
// root for file modules inside it), plus extra flags.
func startSoul(t testing.TB, k *keeper, sid, dir string, extra ...string) *testutil.Process {
	t.Helper()
	args := []string{"run", "--keeper", k.url, "--sid", sid, "--data-dir", dir, "--root", filepath.Join(dir, "root"),
		"--reconnect-min", "50ms", "--reconnect-max", "300ms", "--log-level", "debug"}
	return testutil.StartProcess(t, "soul "+sid, soulBin, append(args, extra...)...)
}

// call builds a request running module with params on sid.
func call(sid, taskID, module string, params map[string]any, timeout time.Duration) dispatch.Request {
	return dispatch.Request{SID: sid, Work: dispatch.Work{
		RunID: "run-1", TaskID: taskID + "/" + sid, Timeout: timeout,
		Call: &dispatch.Call{Module: module, Params: params},
	}}
}

func calls(sids []string, taskID, module string, params map[string]any, timeout time.Duration) []dispatch.Request {
	out := make([]dispatch.Request, len(sids))
	for i, sid := range sids {
		out[i] = call(sid, taskID, module, params, timeout)
	}
	return out
}
