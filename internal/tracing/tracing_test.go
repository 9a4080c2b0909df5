package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestOffByDefault: without an OTLP endpoint (or with OTEL_SDK_DISABLED)
// the provider is a no-op and nothing is exported.
func TestOffByDefault(t *testing.T) {
	for _, e := range []map[string]string{{}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}} {
		tp, stop, err := Setup(context.Background(), "soulstack-keeper", "v1", env(e))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := tp.(noop.TracerProvider); !ok || Endpoint(env(e)) != "" {
			t.Errorf("%v: provider %T, endpoint %q", e, tp, Endpoint(env(e)))
		}
		if err := stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Setup(context.Background(), "k", "v1", env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})); err == nil ||
		!strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("grpc protocol: %v", err)
	}
}

// TestExportsOverOTLPHTTP: with OTEL_EXPORTER_OTLP_ENDPOINT set, spans go
// to <endpoint>/v1/traces as OTLP protobuf, with the service's name and
// version in the resource, and the trace context survives Inject and
// Extract.
func TestExportsOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var reqs []*coltrace.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("%s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("not OTLP: %v", err)
		}
		mu.Lock()
		reqs = append(reqs, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ = proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	ctx := context.Background()
	tp, stop, err := Setup(ctx, "soulstack-keeper", "v9.9.9", env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	pctx, parent := tp.Tracer(ScopeEngine).Start(ctx, "dispatch")
	carried := Inject(pctx)
	cctx, child := tp.Tracer(ScopeSoul).Start(Extract(ctx, carried), "execute core.test.ping")
	if got := trace.SpanContextFromContext(cctx); got.TraceID() != parent.SpanContext().TraceID() || carried["traceparent"] == "" {
		t.Errorf("trace context not carried: %v", carried)
	}
	child.End()
	parent.End()
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	names, service := map[string]bool{}, ""
	for _, r := range reqs {
		for _, rs := range r.ResourceSpans {
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names[s.Name] = true
				}
			}
		}
	}
	if !names["dispatch"] || !names["execute core.test.ping"] || service != "soulstack-keeper" {
		t.Fatalf("exported spans %v of service %q in %d requests", names, service, len(reqs))
	}
	if Inject(ctx) != nil {
		t.Error("a context without a span injected something")
	}
}
