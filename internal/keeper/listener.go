package keeper

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// sniffTimeout bounds how long a new connection may stay silent before its
// first byte decides whether it speaks TLS.
const sniffTimeout = 10 * time.Second

// recordTypeHandshake is the first byte of every TLS connection (a
// ClientHello record); no HTTP request or h2c preface starts with it.
const recordTypeHandshake = 0x16

// sniffListener serves TLS and plain connections on one port: it reads the
// first byte of each accepted connection and hands out a *tls.Conn for a
// TLS ClientHello, the plain connection otherwise. The http.Server behind
// it then speaks HTTP/2 or HTTP/1.1 over TLS (ALPN), and HTTP/1.1 or h2c
// over plain TCP. Sniffing happens on a goroutine per connection, so a
// silent client never holds up Accept.
type sniffListener struct {
	inner net.Listener
	tls   *tls.Config
	// noPlain refuses plain connections (plain_http: false): each gets a
	// plain HTTP 400 naming https:// and is closed, before any request
	// (or token) is read.
	noPlain bool

	conns    chan net.Conn
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	err      error                 // why accepting stopped
	sniffing map[net.Conn]struct{} // connections whose first byte is awaited
	wg       sync.WaitGroup
}

func newSniffListener(inner net.Listener, cfg *tls.Config, plain bool) *sniffListener {
	l := &sniffListener{inner: inner, tls: cfg, noPlain: !plain, conns: make(chan net.Conn), done: make(chan struct{}), sniffing: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

func (l *sniffListener) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() { // resource exhaustion: retry like net/http
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
					continue
				case <-l.done:
					return
				}
			}
			l.stop(err)
			return
		}
		backoff = 0
		l.mu.Lock()
		if l.err != nil {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.sniffing[c] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.sniff(c)
	}
}

func (l *sniffListener) sniff(c net.Conn) {
	defer l.wg.Done()
	br := bufio.NewReaderSize(c, 16)
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	first, err := br.Peek(1)
	l.mu.Lock()
	delete(l.sniffing, c)
	l.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	var out net.Conn = &peekedConn{Conn: c, r: br}
	switch {
	case first[0] == recordTypeHandshake:
		out = tls.Server(out, l.tls)
	case l.noPlain:
		refusePlain(c)
		return
	}
	select {
	case l.conns <- out:
	case <-l.done:
		c.Close()
	}
}

// plainRefusal answers a plain connection when plain HTTP is off.
const plainRefusal = "This keeper serves HTTPS only (plain_http: false): call it with https://, pinning its CA (soulctl --fingerprint or --ca-file).\n"

// refusePlain writes a plain HTTP 400 saying to use https:// and closes c.
// The request itself (and any token in it) is never read.
func refusePlain(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		len(plainRefusal), plainRefusal)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		// Read what the client still sends (briefly, boundedly): closing
		// with unread data would reset the connection before the client
		// read the answer.
		_ = tc.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = io.Copy(io.Discard, io.LimitReader(tc, 1<<16))
	}
	c.Close()
}

// Accept returns the next sniffed connection.
func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		return nil, l.err
	}
}

// stop ends accepting with err (the first reason wins) and closes the
// connections still being sniffed.
func (l *sniffListener) stop(err error) {
	l.once.Do(func() {
		l.mu.Lock()
		l.err = err
		for c := range l.sniffing {
			c.Close()
		}
		l.mu.Unlock()
		close(l.done)
	})
}

// Close stops accepting, closes the socket and waits for the sniffing
// goroutines, closing connections nobody accepted.
func (l *sniffListener) Close() error {
	l.stop(net.ErrClosed)
	err := l.inner.Close()
	l.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Addr returns the socket's address.
func (l *sniffListener) Addr() net.Addr { return l.inner.Addr() }

// peekedConn reads the sniffed bytes before the rest of the connection.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
