// Package testutil is the harness the integration tests share: binaries
// built once in TestMain, real processes killed by PID when the test ends,
// a goroutine-safe output buffer, polling with a deadline and free loopback
// addresses. It uses the standard library only, so any test may import it;
// PostgreSQL databases for tests are in the pgtest subpackage.
package testutil

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent use: a process or a logger
// writes to it while the test reads it. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// WaitFor polls cond every 20ms until it holds, and fails the test once
// within has passed; format and args say what was awaited.
func WaitFor(t testing.TB, within time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for "+format, append([]any{within}, args...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreeAddr returns a loopback host:port nobody listens on right now, for a
// program the test starts that must be told its address in advance.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return FreeAddrOn(t, "127.0.0.1")
}

// FreeAddrOn is FreeAddr on the address ip of this machine.
func FreeAddrOn(t testing.TB, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
