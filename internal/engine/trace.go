package engine

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/tracing"
)

// Span attribute keys (internal/tracing: ids, names and statuses only —
// never parameters or output, which may hold secrets).
const (
	attrApplyID     = attribute.Key("soulstack.apply_id")
	attrIncarnation = attribute.Key("soulstack.incarnation")
	attrScenario    = attribute.Key("soulstack.scenario")
	attrCheck       = attribute.Key("soulstack.check")
	attrStatus      = attribute.Key("soulstack.status")
	attrTask        = attribute.Key("soulstack.task")
	attrPath        = attribute.Key("soulstack.task.path")
	attrHosts       = attribute.Key("soulstack.hosts")
	attrWave        = attribute.Key("soulstack.wave")
	attrSID         = attribute.Key("soulstack.sid")
	attrTaskID      = attribute.Key("soulstack.task_id")
	attrModule      = attribute.Key("soulstack.module")
	attrDestiny     = attribute.Key("soulstack.destiny")
	attrAttempt     = attribute.Key("soulstack.attempt")
)

// runSpan starts the root span of a run: a run is one trace.
func (r *runner) runSpan(ctx context.Context) (context.Context, trace.Span) {
	return r.e.tracer.Start(ctx, "run "+r.sc.Name, trace.WithNewRoot(), trace.WithAttributes(
		attrApplyID.String(r.run.ID), attrIncarnation.String(r.inc.Name), attrScenario.String(r.sc.Name), attrCheck.Bool(r.run.Check)))
}

// endRunSpan records how the run ended.
func endRunSpan(span trace.Span, status string) {
	span.SetAttributes(attrStatus.String(status))
	if status != store.RunSucceeded {
		span.SetStatus(codes.Error, "run "+status)
	}
	span.End()
}

// taskSpan starts the span of a task over its hosts.
func (r *runner) taskSpan(ctx context.Context, name, path string, hosts int) (context.Context, trace.Span) {
	return r.e.tracer.Start(ctx, "task "+name, trace.WithAttributes(attrTask.String(name), attrPath.String(path), attrHosts.Int(hosts)))
}

// waveSpan starts the span of one wave of a task.
func (r *runner) waveSpan(ctx context.Context, wave, hosts int) (context.Context, trace.Span) {
	return r.e.tracer.Start(ctx, "wave "+strconv.Itoa(wave), trace.WithAttributes(attrWave.Int(wave), attrHosts.Int(hosts)))
}

// dispatchSpan starts the span of one Work sent to one host and puts its
// context into the work, for the soul's span.
func (r *runner) dispatchSpan(ctx context.Context, sid string, w *dispatch.Work, attempt int64) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{attrSID.String(sid), attrTaskID.String(w.TaskID), attrAttempt.Int64(attempt)}
	if w.Call != nil {
		attrs = append(attrs, attrModule.String(w.Call.Module))
	}
	if w.Bundle != nil {
		attrs = append(attrs, attrDestiny.String(w.Bundle.Destiny))
	}
	ctx, span := r.e.tracer.Start(ctx, "dispatch", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	w.Trace = tracing.Inject(ctx)
	return ctx, span
}

// endDispatchSpan records a host's result.
func endDispatchSpan(span trace.Span, res domain.Result) {
	span.SetAttributes(attrStatus.String(string(res.Status())))
	if res.Failed || res.Unreachable {
		span.SetStatus(codes.Error, string(res.Status()))
	}
	span.End()
}
