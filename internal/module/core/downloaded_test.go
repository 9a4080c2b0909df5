package core

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/soulstack/soulstack/internal/module"
)

func TestFileDownloaded(t *testing.T) {
	body := []byte("release tarball v1\n")
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/v1.tgz":
			_, _ = w.Write(body)
		case "/big":
			_, _ = w.Write(make([]byte, 2048))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	sum := sha256.Sum256(body)
	pin := hex.EncodeToString(sum[:])
	p := filepath.Join(t.TempDir(), "v1.tgz")
	params := map[string]any{"path": p, "url": srv.URL + "/v1.tgz", "sha256": pin, "mode": "0600"}

	// Check mode never fetches.
	wantChanged(t, run(t, "core.file.downloaded", params, &module.Env{Check: true}), true)
	if hits.Load() != 0 {
		t.Fatal("check mode fetched the URL")
	}
	res := run(t, "core.file.downloaded", params, nil)
	wantChanged(t, res, true)
	if readFile(t, p) != string(body) || res.Data["downloaded"] != true || res.Data["sha256"] != pin {
		t.Fatalf("download: %+v", res)
	}
	// A file that has the pinned checksum is not fetched again.
	before := snap(t, p)
	res = run(t, "core.file.downloaded", params, nil)
	wantChanged(t, res, false)
	before.untouched(t, p)
	if hits.Load() != 1 || res.Data["downloaded"] != false {
		t.Fatalf("second run fetched (%d hits): %+v", hits.Load(), res)
	}
	// Only the mode differs: fixed without a fetch.
	wantChanged(t, run(t, "core.file.downloaded", map[string]any{"path": p, "url": srv.URL + "/v1.tgz", "sha256": pin, "mode": "0644"}, nil), true)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 || hits.Load() != 1 {
		t.Fatalf("mode %v, %d hits", fi.Mode(), hits.Load())
	}
	// A download that does not match the pin is refused, the file kept.
	before = snap(t, p)
	_, err := runErr(t, "core.file.downloaded", map[string]any{"path": p, "url": srv.URL + "/big", "sha256": strings.Repeat("0", 64)}, nil)
	wantErrContains(t, err, "not the pinned", "left as it was")
	before.untouched(t, p)
	// force without a pin: fetched every run, replaced only when different.
	res = run(t, "core.file.downloaded", map[string]any{"path": p, "url": srv.URL + "/v1.tgz", "force": true}, nil)
	wantChanged(t, res, false)
	before.untouched(t, p)

	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"no pin", map[string]any{"path": p, "url": srv.URL + "/v1.tgz"}, "required unless force"},
		{"bad pin", map[string]any{"path": p, "url": srv.URL + "/v1.tgz", "sha256": "abc"}, "64 hex digits"},
		{"bad url", map[string]any{"path": p, "url": "ftp://x/y", "force": true}, "not an http or https URL"},
		{"404", map[string]any{"path": p, "url": srv.URL + "/none", "force": true}, "404"},
		{"too big", map[string]any{"path": p, "url": srv.URL + "/big", "force": true, "max_size": 1024}, "max_size"},
		{"bad timeout", map[string]any{"path": p, "url": srv.URL + "/big", "force": true, "timeout": "soon"}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.file.downloaded", tc.params, nil)
			wantErrContains(t, err, tc.want)
			before.untouched(t, p)
		})
	}
}
