package soul

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	_ "github.com/soulstack/soulstack/internal/module/core"
)

// probe is a test module that reports what it saw of its env.
type probe struct{ name string }

func (p probe) Name() string          { return p.name }
func (p probe) Schema() module.Schema { return module.Schema{} }
func (p probe) Apply(ctx context.Context, params map[string]any, env *module.Env) (domain.Result, error) {
	switch params["do"] {
	case "panic":
		panic("boom")
	case "error":
		return domain.Result{}, errors.New("could not run")
	case "hang":
		<-ctx.Done()
		return domain.Result{}, nil
	}
	tmpl, err := fs.ReadFile(env.Files, "templates/a.tmpl")
	if err != nil {
		return domain.Result{}, err
	}
	env.Log.Info("probing")
	return domain.Result{Stdout: string(tmpl), Data: map[string]any{
		"check": env.Check, "root": env.Root, "family": env.Facts["family"], "tdata": env.TemplateData["x"],
	}}, nil
}

func init() { module.Register(probe{name: "soultest.probe"}) }

func TestModuleRunner(t *testing.T) {
	root := t.TempDir()
	var bundleEnv *module.Env
	r := &ModuleRunner{
		Root:  root,
		Facts: func() map[string]any { return map[string]any{"family": "debian"} },
		Bundle: func(_ context.Context, b *dispatch.Bundle, env *module.Env) domain.Result {
			bundleEnv = env
			return domain.Result{Output: map[string]any{"destiny": b.Destiny}}
		},
		Logger: slog.New(slog.DiscardHandler),
	}
	callWork := func(mod string, params map[string]any) dispatch.Work {
		return dispatch.Work{TaskID: "t", Timeout: 5 * time.Second, Call: &dispatch.Call{Module: mod, Params: params}}
	}
	probeWork := callWork("soultest.probe", nil)
	probeWork.Check = true
	probeWork.Call.Files = map[string][]byte{"templates/a.tmpl": []byte("{{ .x }}")}
	probeWork.Call.TemplateData = map[string]any{"x": 1}

	tests := []struct {
		name    string
		work    dispatch.Work
		check   func(domain.Result) bool
		wantMsg string
	}{
		{"ping", callWork("core.test.ping", nil), func(r domain.Result) bool { return !r.Failed && r.Stdout == "pong" }, ""},
		{"env reaches the module", probeWork, func(r domain.Result) bool {
			return !r.Failed && r.Stdout == "{{ .x }}" && r.Data["check"] == true && r.Data["root"] == root &&
				r.Data["family"] == "debian" && r.Data["tdata"] == 1
		}, ""},
		{"unknown module", callWork("core.nope", nil), nil, "unknown module core.nope"},
		{"module error", callWork("soultest.probe", map[string]any{"do": "error"}), nil, "could not run"},
		{"module panic", callWork("soultest.probe", map[string]any{"do": "panic"}), nil, "panic while running the task: boom"},
		{"timeout", dispatch.Work{Timeout: 100 * time.Millisecond, Call: &dispatch.Call{Module: "soultest.probe", Params: map[string]any{"do": "hang"}}}, nil, "timed out after 100ms"},
		{"bad file path", dispatch.Work{Call: &dispatch.Call{Module: "soultest.probe", Files: map[string][]byte{"../x": nil}}}, nil, "invalid bundle file path"},
		{"neither call nor bundle", dispatch.Work{}, nil, "neither"},
		{"both call and bundle", dispatch.Work{Call: &dispatch.Call{}, Bundle: &dispatch.Bundle{}}, nil, "both"},
		{"bundle", dispatch.Work{Check: true, Bundle: &dispatch.Bundle{Destiny: "redis"}}, func(r domain.Result) bool {
			return !r.Failed && r.Output["destiny"] == "redis" && bundleEnv.Check && bundleEnv.Root == root
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Run(context.Background(), tt.work)
			if tt.wantMsg != "" {
				if !got.Failed || !strings.Contains(got.Msg, tt.wantMsg) {
					t.Fatalf("result = %+v, want failed with %q", got, tt.wantMsg)
				}
				return
			}
			if !tt.check(got) {
				t.Fatalf("result = %+v", got)
			}
		})
	}
}

func TestModuleRunnerWithoutBundleFunc(t *testing.T) {
	r := &ModuleRunner{}
	got := r.Run(context.Background(), dispatch.Work{Bundle: &dispatch.Bundle{Destiny: "x"}})
	if !got.Failed || got.Msg != "destiny bundles not supported by this soul" {
		t.Fatalf("result = %+v", got)
	}
}

func TestModuleRunnerCancelled(t *testing.T) {
	r := &ModuleRunner{}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(errCancelledByKeeper) })
	got := r.Run(ctx, dispatch.Work{Call: &dispatch.Call{Module: "core.test.sleep", Params: map[string]any{"duration": "10s"}}})
	if !got.Failed || !strings.Contains(got.Msg, "cancelled by the keeper") {
		t.Fatalf("result = %+v", got)
	}
}

func TestModuleRunnerFileUnderRoot(t *testing.T) {
	root := t.TempDir()
	r := &ModuleRunner{Root: root}
	got := r.Run(context.Background(), dispatch.Work{Call: &dispatch.Call{Module: "core.file.present", Params: map[string]any{"path": "/etc/motd", "content": "hi\n", "makedirs": true}}})
	if got.Failed || !got.Changed {
		t.Fatalf("file.present under root = %+v", got)
	}
	if _, err := fs.Stat(os.DirFS(root), "etc/motd"); err != nil {
		t.Fatalf("file not written under root: %v", err)
	}
}
