package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/checker/checkertest"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/store/sqlite"
	"github.com/soulstack/soulstack/internal/testutil"
)

// platformBin is the test platform executable, built once by TestMain.
var platformBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	_, bins, cleanup, err := testutil.BuildBinaries("./testplatform")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	platformBin = bins["testplatform"]
	return m.Run()
}

// t0 is where fake clocks start.
var t0 = time.Date(2025, 3, 1, 12, 0, 30, 0, time.UTC)

func newStore(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keeper.db"))
	if err != nil {
		t.Fatalf("opening sqlite store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// platformState mirrors the test platform's state file.
type platformState struct {
	Nodes           []platformNode         `json:"nodes"`
	Drained         []string               `json:"drained"`
	VMs             map[string]*platformVM `json:"vms"`
	RescheduleFail  []string               `json:"reschedule_fail"`
	ReschedulePolls int                    `json:"reschedule_polls"`
	IPMIFail        []string               `json:"ipmi_fail"`
	FailAt          map[string][]int       `json:"fail_at,omitempty"`
	Resets          []string               `json:"resets"`
	Calls           [][]string             `json:"calls"`
}

type platformNode struct {
	UUID   string `json:"uuid"`
	Status string `json:"status"`
}

type platformVM struct {
	State     float64  `json:"state"`
	BootPolls int      `json:"boot_polls"`
	Requested []string `json:"requested"`
}

// platform is one simulated platform, with its state file.
type platform struct {
	t     *testing.T
	state string
}

func newPlatform(t *testing.T, s platformState) *platform {
	t.Helper()
	p := &platform{t: t, state: filepath.Join(t.TempDir(), "platform.json")}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *platform) read() platformState {
	p.t.Helper()
	b, err := os.ReadFile(p.state)
	if err != nil {
		p.t.Fatal(err)
	}
	var s platformState
	if err := json.Unmarshal(b, &s); err != nil {
		p.t.Fatal(err)
	}
	return s
}

// calls returns the platform calls whose command line starts with prefix.
func (p *platform) calls(prefix string) []string {
	var out []string
	for _, c := range p.read().Calls {
		line := strings.Join(c, " ")
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// bindings are the natural bindings of the seed's platform: each of its
// CLIs (scheduler, cluster, commands, tasks) bound to the simulator, and
// the status of a task id read with `tasks show --uuid {id}`, resolved
// through the tasks binding.
func (p *platform) bindings() []Binding {
	var bs []Binding
	for _, prefix := range []string{"scheduler", "cluster", "commands", "tasks"} {
		bs = append(bs, Binding{
			Prefix:        prefix,
			Executable:    platformBin,
			Args:          []string{"--state", p.state, prefix},
			StatusCommand: "tasks show --uuid {id}",
			Timeout:       20 * time.Second,
		})
	}
	return bs
}

// env is a Checker on a fresh sqlite store with an auto-advancing clock.
type env struct {
	t     *testing.T
	store store.Store
	clock *checkertest.FakeClock
	c     *Checker
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{t: t, store: newStore(t), clock: checkertest.NewFakeClock(t0, true)}
	cfg.Store = e.store
	if cfg.Clock == nil {
		cfg.Clock = e.clock
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	t.Cleanup(func() { c.Close() })
	return e
}

// put stores a procedure given inline or as a file of examples/procedures.
func (e *env) put(name, src string) {
	e.t.Helper()
	if _, err := e.c.PutProcedure(context.Background(), name, src); err != nil {
		e.t.Fatalf("PutProcedure %s: %v", name, err)
	}
}

func (e *env) putExample(name, file string) {
	e.t.Helper()
	e.put(name, readExample(e.t, file))
}

func readExample(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "procedures", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// execWait launches a procedure and waits for its single task.
func (e *env) execWait(name string, vars map[string]any) store.CheckerTask {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tasks, err := e.c.Execute(ctx, ExecRequest{Procedure: name, Vars: vars})
	if err != nil {
		e.t.Fatalf("Execute %s: %v", name, err)
	}
	if len(tasks) != 1 {
		e.t.Fatalf("Execute %s: %d tasks, want 1", name, len(tasks))
	}
	t, err := e.c.Wait(ctx, tasks[0].ID)
	if err != nil {
		e.t.Fatalf("Wait %s: %v", name, err)
	}
	return t
}

// children returns the sub-tasks of parent, by creation.
func (e *env) children(parent string) []store.CheckerTask {
	e.t.Helper()
	all, err := e.store.ListCheckerTasks(context.Background(), "", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []store.CheckerTask
	for _, t := range all {
		if t.ParentID == parent {
			full, err := e.store.GetCheckerTask(context.Background(), t.ID)
			if err != nil {
				e.t.Fatal(err)
			}
			out = append(out, full)
		}
	}
	return out
}

// logLines returns the task's step log lines of kind ("" = all) as
// "step: message".
func logLines(t store.CheckerTask, kind string) []string {
	var out []string
	for _, l := range t.Log {
		if kind == "" || l.Kind == kind {
			out = append(out, l.Step+": "+l.Message)
		}
	}
	return out
}

func dumpLog(t store.CheckerTask) string {
	var sb strings.Builder
	for _, l := range t.Log {
		fmt.Fprintf(&sb, "  %s [%s] %s: %s\n", l.Time.Format(time.TimeOnly), l.Kind, l.Step, l.Message)
	}
	return sb.String()
}
