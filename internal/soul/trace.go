package soul

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/tracing"
)

// executeSpan starts the span of the soul's execution of w, the child of
// the keeper's dispatch span whose context w carries. Its attributes are
// ids and names only (never params or output).
func (a *Agent) executeSpan(ctx context.Context, w dispatch.Work) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{attribute.String("soulstack.sid", a.cfg.SID), attribute.String("soulstack.task_id", w.TaskID),
		attribute.String("soulstack.apply_id", w.RunID), attribute.Bool("soulstack.check", w.Check)}
	name := "execute"
	switch {
	case w.Call != nil:
		name += " " + w.Call.Module
		attrs = append(attrs, attribute.String("soulstack.module", w.Call.Module))
	case w.Bundle != nil:
		name += " destiny " + w.Bundle.Destiny
		attrs = append(attrs, attribute.String("soulstack.destiny", w.Bundle.Destiny))
	}
	return a.tracer.Start(tracing.Extract(ctx, w.Trace), name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// endExecuteSpan records the result's status.
func endExecuteSpan(span trace.Span, r domain.Result) {
	st := string(r.Status())
	span.SetAttributes(attribute.String("soulstack.status", st))
	if r.Failed {
		span.SetStatus(codes.Error, st)
	}
	span.End()
}
