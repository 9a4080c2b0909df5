// Package tracing sets up OpenTelemetry traces for the Keeper and the soul
// (SPEC §14): off by default, on when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, exported over OTLP/HTTP (protobuf). The exporter reads the other
// standard variables itself (OTEL_EXPORTER_OTLP_HEADERS, _CERTIFICATE,
// _TIMEOUT, …); OTEL_SDK_DISABLED=true turns tracing off, and
// OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES add to the resource.
//
// A run is one trace: the engine's run, task, wave and per-host dispatch
// spans on the Keeper, and the soul's execution of the work as a child of
// its dispatch span, across the stream: the trace context travels in the
// work (W3C traceparent, see Inject and Extract). Spans carry ids, names
// and statuses only, never parameters or output (which may hold secrets).
package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Instrumentation scope names of the spans (what a backend shows as the
// tracer).
const (
	ScopeEngine = "github.com/soulstack/soulstack/internal/engine"
	ScopeSoul   = "github.com/soulstack/soulstack/internal/soul"
)

// Enabled reports whether getenv asks for traces.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Endpoint is where traces go ("" when they are off).
func Endpoint(getenv func(string) string) string {
	if !Enabled(getenv) {
		return ""
	}
	if ep := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ep != "" {
		return ep
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
}

// Setup returns the tracer provider of a component (service is
// soulstack-keeper or soulstack-soul) and the function that flushes and
// stops it. Without an endpoint it is a no-op provider and nothing is
// exported. getenv is os.Getenv outside tests.
func Setup(ctx context.Context, service, version string, getenv func(string) string) (trace.TracerProvider, func(context.Context) error, error) {
	nop := func(context.Context) error { return nil }
	if !Enabled(getenv) {
		return noop.NewTracerProvider(), nop, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: Soul Stack exports traces over http/protobuf only (an OpenTelemetry Collector's OTLP/HTTP receiver, port 4318)", proto)
	}
	// The exporter reads the other OTEL_EXPORTER_OTLP_* variables itself;
	// the endpoint is given from getenv so it is the one Enabled saw.
	url := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if url == "" {
		url = strings.TrimSuffix(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url))
	if err != nil {
		return nil, nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", service), attribute.String("service.version", version)))
	if err != nil {
		return nil, nil, fmt.Errorf("the trace resource: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the defaults.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Provider returns tp, or a no-op provider when tp is nil.
func Provider(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return noop.NewTracerProvider()
	}
	return tp
}

var propagator = propagation.TraceContext{}

// Inject returns the trace context of ctx as W3C headers (traceparent,
// tracestate) to carry in a message; nil when ctx holds no sampled span.
func Inject(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := propagation.MapCarrier{}
	propagator.Inject(ctx, m)
	if len(m) == 0 {
		return nil
	}
	return m
}

// Extract returns ctx with the remote trace context carried in m (from
// Inject) as the parent of the spans started from it.
func Extract(ctx context.Context, m map[string]string) context.Context {
	if len(m) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier(m))
}
