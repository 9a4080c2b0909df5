package keeper

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/tlsutil"
)

// TestSniffListener serves plain HTTP/1.1, h2c, and TLS with HTTP/1.1 and
// HTTP/2 on one port, while a silent connection holds up nothing.
func TestSniffListener(t *testing.T) {
	m, err := tlsutil.LoadOrGenerate(filepath.Join(t.TempDir(), "tls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := m.Fingerprint()
	srvTLS, err := m.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := newSniffListener(ln, srvTLS, true)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s tls=%v", r.Proto, r.TLS != nil)
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sl) }()
	addr := ln.Addr().String()

	// A client that connects and says nothing.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	pinned, err := tlsutil.PinnedClientConfig(fp)
	if err != nil {
		t.Fatal(err)
	}
	tlsClient := func(h2 bool) *http.Client {
		tc := pinned.Clone()
		tc.NextProtos = nil // the transport offers what Protocols allow
		tr := &http.Transport{TLSClientConfig: tc, Protocols: new(http.Protocols)}
		tr.Protocols.SetHTTP1(!h2)
		tr.Protocols.SetHTTP2(h2)
		return &http.Client{Transport: tr, Timeout: 5 * time.Second}
	}
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)

	for _, tc := range []struct {
		name, url string
		client    *http.Client
		want      string
	}{
		{"plain HTTP/1.1", "http://" + addr, &http.Client{Timeout: 5 * time.Second}, "HTTP/1.1 tls=false"},
		{"h2c", "http://" + addr, &http.Client{Transport: h2c, Timeout: 5 * time.Second}, "HTTP/2.0 tls=false"},
		{"TLS HTTP/2", "https://" + addr, tlsClient(true), "HTTP/2.0 tls=true"},
		{"TLS HTTP/1.1", "https://" + addr, tlsClient(false), "HTTP/1.1 tls=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.client.Get(tc.url + "/x")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if string(b) != tc.want {
				t.Fatalf("got %q, want %q", b, tc.want)
			}
		})
	}

	// Shutdown closes the listener promptly despite the silent client.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != http.ErrServerClosed {
		t.Fatalf("Serve: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("shutdown took %s", d)
	}
	if _, err := sl.Accept(); err == nil {
		t.Fatal("Accept after Close succeeded")
	}
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Fatal("the silent connection is still open")
	}
}

// TestSniffNoSilentStall: a silent connection does not delay the next one.
func TestSniffNoSilentStall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := newSniffListener(ln, &tls.Config{}, true)
	defer sl.Close()
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	talker, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer talker.Close()
	if _, err := talker.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	got := make(chan net.Conn, 1)
	go func() {
		c, err := sl.Accept()
		if err == nil {
			got <- c
		}
	}()
	select {
	case c := <-got:
		defer c.Close()
		b := make([]byte, 3)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "GET" {
			t.Fatalf("first bytes %q, %v", b, err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the talking connection waited behind the silent one")
	}
}

// TestPlainHTTPOff: audit L6 — with plain HTTP off, a plain request (which
// would carry its bearer token in clear) is answered 400 naming https://,
// never served, while TLS is served as before.
func TestPlainHTTPOff(t *testing.T) {
	m, err := tlsutil.LoadOrGenerate(filepath.Join(t.TempDir(), "tls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := m.Fingerprint()
	srvTLS, err := m.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		fmt.Fprintf(w, "tls=%v", r.TLS != nil)
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(newSniffListener(ln, srvTLS, false)) }()
	defer func() {
		srv.Close()
		<-done
	}()
	addr := ln.Addr().String()

	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer secret-token")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "https://") {
		t.Fatalf("plain request with plain HTTP off: %d %q", resp.StatusCode, b)
	}
	pinned, err := tlsutil.PinnedClientConfig(fp)
	if err != nil {
		t.Fatal(err)
	}
	pc := pinned.Clone()
	pc.NextProtos = nil // the transport offers what Protocols allow
	tr := &http.Transport{TLSClientConfig: pc, Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP1(true)
	tc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err = tc.Get("https://" + addr + "/x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "tls=true" || served.Load() != 1 {
		t.Fatalf("TLS request: %q, %d requests served (want only this one)", b, served.Load())
	}
}
