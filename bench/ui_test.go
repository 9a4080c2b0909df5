package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/ui"
	"github.com/soulstack/soulstack/internal/ui/uiseed"
)

// uiBound is issue 20's bound on a UI page's server time over a
// 10,000-soul fleet.
const uiBound = 300 * time.Millisecond

// BenchmarkUIPages measures the server time of the web UI's pages (the
// handler, store queries and templates; no network) over a keeper store
// (SQLite, the default) holding 10,000 souls and a finished 1,000-host
// run with three tasks (3,000 results): each sub-benchmark renders one
// page, signed in as a viewer, and reports its median and worst time;
// it fails when the median passes 300 ms.
func BenchmarkUIPages(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "keeper.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	key := filepath.Join(dir, "signing.key")
	if err := auth.Init(ctx, st, key); err != nil {
		b.Fatal(err)
	}
	a, err := auth.New(ctx, st, key)
	if err != nil {
		b.Fatal(err)
	}
	viewer, err := a.CreateArchon(ctx, "bench-viewer", auth.RoleViewer)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := a.IssueToken(ctx, viewer, time.Hour, "bench")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	if err := uiseed.Fleet(ctx, st, 10000, now); err != nil {
		b.Fatal(err)
	}
	run, err := uiseed.BigRun(ctx, st, "edge", 1000, now)
	if err != nil {
		b.Fatal(err)
	}
	u, err := ui.New(ui.Config{Store: st, Auth: a})
	if err != nil {
		b.Fatal(err)
	}
	h := u.Handler()
	// Sign in once: the session cookie of the login response.
	login := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(url.Values{"token": {tok.Token}}.Encode()))
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	login.Header.Set("Origin", "http://example.com")
	login.Host = "example.com"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, login)
	cookies := rec.Result().Cookies()
	if len(cookies) == 0 {
		b.Fatalf("sign-in: %d, no cookie: %s", rec.Code, rec.Body.String())
	}
	for _, p := range []struct{ name, path string }{
		{"souls", "/ui/souls"},
		{"souls-page-50", "/ui/souls?after=" + uiseed.SID(4899) + "&pos=4901"},
		{"souls-filtered", "/ui/souls?status=connected&coven=dc2&fact=os.family&value=redhat"},
		{"souls-prefix", "/ui/souls?sid=host-09"},
		{"dashboard", "/ui/"},
		{"runs", "/ui/runs"},
		{"run-1000-hosts", "/ui/runs/" + run},
		{"run-failed-hosts", "/ui/runs/" + run + "/failed"},
		{"run-host", "/ui/runs/" + run + "/hosts/" + uiseed.SID(13)},
	} {
		b.Run(p.name, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, p.path, nil)
				for _, c := range cookies {
					req.AddCookie(c)
				}
				rec := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(rec, req)
				took = append(took, time.Since(start))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d\n%s", p.path, rec.Code, rec.Body.String())
				}
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			med := took[len(took)/2]
			b.ReportMetric(float64(med.Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "worst-ms")
			if med > uiBound {
				b.Errorf("GET %s: median %v of server time, over the bound of %v", p.path, med, uiBound)
			}
		})
	}
}
