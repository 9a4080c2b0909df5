package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/tracing"
)

// TestRunIsOneTrace runs a scenario over the real gateway and two real
// souls with an in-memory span exporter shared by the engine and the
// souls (internal/tracing): the run is one trace whose root is the run
// span; the serial task has one span per wave; every host's dispatch is a
// span of its wave; and each soul's execution of the module is the child
// of its dispatch span — its context crossed the stream inside the work.
// No span carries a parameter or an input value.
func TestRunIsOneTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gateway and real souls")
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	svc := loadService(t, map[string]string{
		"scenario/create/main.yml": `
input:
  token: {type: string, secret: true, default: "s3cret-input-value"}
tasks:
  - name: marker
    module: core.file.present
    serial: 1
    params: {path: /etc/marker, content: "${ input.token }", makedirs: true}
`,
	})
	f := startTracedFleet(t, svc, tp)
	f.soul("a", "prod")
	f.soul("b", "prod")
	id, err := f.eng.CreateIncarnation(context.Background(), engine.CreateRequest{Name: "app-prod", Service: "app", Covens: []string{"prod"}})
	if err != nil {
		t.Fatal(err)
	}
	if run := f.wait(id); run.Status != store.RunSucceeded {
		t.Fatalf("create %s: %s", run.Status, run.Error)
	}
	// The souls end their spans before they send the result; the run span
	// ends as execute returns, just after the run's end is recorded.
	var spans []sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if spans = exp.GetSpans().Snapshots(); slices.ContainsFunc(spans, func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "run create" }) {
			break
		}
	}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	var root sdktrace.ReadOnlySpan
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
		if s.Name() == "run create" {
			root = s
		}
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.Emit(), "s3cret") {
				t.Errorf("span %q carries a secret in %s", s.Name(), a.Key)
			}
		}
	}
	if root == nil {
		t.Fatalf("no run span among %d spans", len(spans))
	}
	if root.Parent().IsValid() || attr(root, "soulstack.apply_id") != id || attr(root, "soulstack.status") != store.RunSucceeded {
		t.Errorf("run span: parent %v, attributes %v", root.Parent(), root.Attributes())
	}
	parentName := func(s sdktrace.ReadOnlySpan) string {
		if p, ok := byID[s.Parent().SpanID()]; ok {
			return p.Name()
		}
		return ""
	}
	count := map[string]int{}
	souls := map[string]bool{}
	for _, s := range spans {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %q is in another trace", s.Name())
		}
		switch {
		case s.Name() == "task marker":
			count["task"]++
			if parentName(s) != "run create" {
				t.Errorf("task span's parent %q", parentName(s))
			}
		case strings.HasPrefix(s.Name(), "wave "):
			count["wave"]++
			if parentName(s) != "task marker" {
				t.Errorf("%s span's parent %q", s.Name(), parentName(s))
			}
		case s.Name() == "dispatch":
			count["dispatch"]++
			if !strings.HasPrefix(parentName(s), "wave ") || attr(s, "soulstack.module") != "core.file.present" || s.SpanKind() != trace.SpanKindClient {
				t.Errorf("dispatch span: parent %q, attributes %v", parentName(s), s.Attributes())
			}
		case s.Name() == "execute core.file.present":
			count["execute"]++
			p, ok := byID[s.Parent().SpanID()]
			if !ok || p.Name() != "dispatch" || attr(p, "soulstack.sid") != attr(s, "soulstack.sid") ||
				attr(p, "soulstack.task_id") != attr(s, "soulstack.task_id") || !s.Parent().IsRemote() {
				t.Errorf("soul span %v: parent %q (remote %v)", s.Attributes(), parentName(s), s.Parent().IsRemote())
			}
			if s.InstrumentationScope().Name != tracing.ScopeSoul || attr(s, "soulstack.status") != "changed" {
				t.Errorf("soul span: scope %q, attributes %v", s.InstrumentationScope().Name, s.Attributes())
			}
			souls[attr(s, "soulstack.sid")] = true
		}
	}
	if count["task"] != 1 || count["wave"] != 2 || count["dispatch"] != 2 || count["execute"] != 2 || !souls["a"] || !souls["b"] {
		names := make([]string, 0, len(spans))
		for _, s := range spans {
			names = append(names, s.Name()+"←"+parentName(s))
		}
		t.Fatalf("spans %v (souls %v): %s", count, souls, strings.Join(names, ", "))
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}
