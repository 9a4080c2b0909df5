package testutil_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/testutil"
)

// helperEnv makes the test binary act as the program StartProcess runs.
const helperEnv = "TESTUTIL_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "exit3":
		fmt.Println("bye")
		os.Exit(3)
	case "sleep":
		fmt.Println("sleeping")
		time.Sleep(time.Minute)
	}
}

// helper starts the test binary as a process behaving as mode says.
func helper(t *testing.T, mode string) *testutil.Process {
	t.Helper()
	t.Setenv(helperEnv, mode)
	return testutil.StartProcess(t, "helper "+mode, os.Args[0])
}

func TestProcessExits(t *testing.T) {
	p := helper(t, "exit3")
	err := p.Wait(10 * time.Second)
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 3 {
		t.Fatalf("Wait = %v, want exit status 3", err)
	}
	if got := p.Output(); got != "bye\n" {
		t.Errorf("Output = %q", got)
	}
}

func TestProcessKilledByPID(t *testing.T) {
	p := helper(t, "sleep")
	testutil.WaitFor(t, 10*time.Second, func() bool { return p.Output() == "sleeping\n" }, "the helper to start")
	if p.PID() <= 0 {
		t.Fatalf("PID %d", p.PID())
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("Wait after SIGTERM = %v", err)
	}
	p.Kill() // after the exit: nothing to do

	q := helper(t, "sleep")
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(q.Kill)
	}
	wg.Wait()
	if err := q.Wait(time.Second); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Wait after Kill = %v", err)
	}
}

// TestProcessCleanup checks that a process still running when its test
// ends is killed.
func TestProcessCleanup(t *testing.T) {
	var pid int
	t.Run("start", func(t *testing.T) {
		pid = helper(t, "sleep").PID()
	})
	// Killed and reaped by the cleanup: the PID names no process.
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("process %d after its test ended: kill -0 says %v", pid, err)
	}
}

func TestBuffer(t *testing.T) {
	var b testutil.Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprint(&b, "x")
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 400 {
		t.Fatalf("%d bytes, want 400", got)
	}
}

// fatalTB records Fatalf's message, then stops the goroutine as
// testing.T's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestWaitFor(t *testing.T) {
	n := 0
	testutil.WaitFor(t, 10*time.Second, func() bool { n++; return n == 3 }, "three calls")
	if n != 3 {
		t.Errorf("cond called %d times", n)
	}

	f := &fatalTB{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() {
		testutil.WaitFor(f, 50*time.Millisecond, func() bool { return false }, "the %s", "impossible")
	})
	wg.Wait()
	if want := "timed out after 50ms waiting for the impossible"; f.msg != want {
		t.Errorf("failure %q, want %q", f.msg, want)
	}
}

func TestFreeAddr(t *testing.T) {
	addr := testutil.FreeAddr(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on the free address %s: %v", addr, err)
	}
	ln.Close()
	if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
		t.Errorf("FreeAddr = %s, want loopback", addr)
	}
}

func TestBuildBinaries(t *testing.T) {
	dir, paths, cleanup, err := testutil.BuildBinaries("./testdata/hello")
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.StartProcess(t, "hello", paths["hello"])
	if err := p.Wait(10 * time.Second); err != nil || p.Output() != "hello\n" {
		t.Fatalf("hello: %v, %q", err, p.Output())
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left after cleanup: %v", dir, err)
	}
	if _, _, _, err := testutil.BuildBinaries("./testdata/none"); err == nil {
		t.Error("building a missing package succeeded")
	}
}

// ReadmeCommands takes the sh blocks between the markers only, drops
// comments and blank lines, joins continued lines, and refuses a missing
// marker or an unclosed block.
func TestReadmeCommands(t *testing.T) {
	md := "```sh\nbefore\n```\n<!-- b -->\ntext\n   ```sh\n   # a comment\n   one --x \\\n     --y\n\n   two # trailing\n   ```\n```go\nnot sh\n```\n```sh\nthree\n```\n<!-- e -->\n```sh\nafter\n```\n"
	p := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(p, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := testutil.ReadmeCommands(p, "<!-- b", "<!-- e -->")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"one --x --y", "two # trailing"}, {"three"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if b := testutil.FindCommands(got, "thr"); !reflect.DeepEqual(b, []string{"three"}) {
		t.Fatalf("FindCommands = %q", b)
	}
	if _, err := testutil.ReadmeCommands(p, "<!-- nope", "<!-- e -->"); err == nil {
		t.Fatal("a missing marker passed")
	}
	if err := os.WriteFile(p, []byte("<!-- b -->\n```sh\nopen\n<!-- e -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := testutil.ReadmeCommands(p, "<!-- b", "<!-- e -->"); err == nil {
		t.Fatal("an unclosed block passed")
	}
}
