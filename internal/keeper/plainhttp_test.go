package keeper_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/keeper"
	"github.com/soulstack/soulstack/internal/testutil"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// TestL6PlainHTTPOff: audit L6 — a keeper with plain_http: false answers a
// plain request (whose bearer token would cross the network in clear) with
// a 400 naming https://, serves the API and the UI over TLS (the session
// cookie Secure), and its Checker, which calls the keeper's own API, keeps
// working over TLS.
func TestL6PlainHTTPOff(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "keeper")
	cfg.ShutdownTimeout = config.Duration(5 * time.Second)
	cfg.PlainHTTP = false
	res, err := keeper.Init(ctx, keeper.InitOptions{Keeper: cfg})
	if err != nil {
		t.Fatal(err)
	}
	_, addr := serveKeeper(t, cfg, "keeper")

	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+res.Token.Token)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "https://") {
		t.Fatalf("plain request to a TLS-only keeper: %d %q", resp.StatusCode, b)
	}

	c, err := apiclient.New("https://"+addr, res.Token.Token, apiclient.WithFingerprint(res.Fingerprint))
	if err != nil {
		t.Fatal(err)
	}
	if who, err := c.Whoami(ctx); err != nil || who.Role != "admin" {
		t.Fatalf("whoami over TLS: %+v, %v", who, err)
	}

	// The UI over TLS: the session cookie is Secure.
	pinned, err := tlsutil.PinnedClientConfig(res.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	pinned.NextProtos = nil // HTTP/1.1: the transport is not set up for h2
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: pinned},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = hc.PostForm("https://"+addr+"/ui/login", url.Values{"token": {res.Token.Token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var secure, found bool
	for _, ck := range resp.Cookies() {
		if ck.Value != "" && ck.HttpOnly {
			found, secure = true, ck.Secure
		}
	}
	if !found || !secure {
		t.Fatalf("UI login over TLS: %d, session cookie found %v, Secure %v", resp.StatusCode, found, secure)
	}

	// The Checker's apicalls reach the keeper over TLS.
	if _, err := c.PutProcedure(ctx, "look", "steps:\n  look:\n    action:\n      apicall: souls list\n"); err != nil {
		t.Fatal(err)
	}
	ex, err := c.ExecuteProcedure(ctx, "look", nil)
	if err != nil || len(ex.TaskIDs) != 1 {
		t.Fatalf("execute: %+v, %v", ex, err)
	}
	var status, runErr string
	testutil.WaitFor(t, 15*time.Second, func() bool {
		task, err := c.GetCheckerTask(ctx, ex.TaskIDs[0])
		status, runErr = task.Status, task.RunError
		return err == nil && (status == "SUCCESS" || status == "FAILURE")
	}, "the checker task to finish")
	if status != "SUCCESS" {
		t.Fatalf("checker task over TLS: %s %s", status, runErr)
	}
}
