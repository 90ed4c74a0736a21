// Package tracing makes OpenTelemetry spans of what a lionbus worker does:
// one span per request, parented on the request's traceparent, and below it
// a span per model call, tool call and store operation. Work a span causes
// (signal events, tool invocations) carries that span's traceparent.
//
// Spans are exported over OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_*
// environment variables name an endpoint (see [FromEnv]); otherwise tracing
// is off and costs nothing.
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
)

// InstrumentationName names lionbus's tracer.
const InstrumentationName = "github.com/lionbus/lionbus"

// Span names.
const (
	SpanModelCall = "lionbus.model.call"
	SpanToolCall  = "lionbus.tool.call"
)

// Attribute keys lionbus sets on its spans.
const (
	AttrRequestID = attribute.Key("lionbus.request.id")
	AttrVerb      = attribute.Key("lionbus.verb")
	AttrBranchID  = attribute.Key("lionbus.branch.id")
	AttrAttempt   = attribute.Key("lionbus.attempt")
	AttrCode      = attribute.Key("lionbus.code")
	AttrProvider  = attribute.Key("lionbus.model.provider")
	AttrModel     = attribute.Key("lionbus.model.name")
	AttrTokensIn  = attribute.Key("lionbus.model.input_tokens")
	AttrTokensOut = attribute.Key("lionbus.model.output_tokens")
	AttrTool      = attribute.Key("lionbus.tool.name")
	AttrCallID    = attribute.Key("lionbus.tool.call_id")
	AttrToolError = attribute.Key("lionbus.tool.error_code")
)

var propagator = propagation.TraceContext{}

// carrier adapts a traceparent and tracestate to the propagator.
type carrier struct{ parent, state string }

func (c *carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.parent
	case "tracestate":
		return c.state
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.parent = value
	case "tracestate":
		c.state = value
	}
}

func (c *carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Remote returns ctx with the remote span context of a W3C traceparent and
// tracestate (an invalid traceparent is ignored).
func Remote(ctx context.Context, traceParent, traceState string) context.Context {
	return propagator.Extract(ctx, &carrier{traceParent, traceState})
}

// Propagate returns ctx carrying, for the events and tool invocations made
// under it, the traceparent of the span in ctx (see
// protocol.ContextWithTraceParent). Without a valid span ctx is returned
// as is.
func Propagate(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	c := &carrier{}
	propagator.Inject(ctx, c)
	return protocol.ContextWithTraceParent(ctx, c.parent, c.state)
}

// StartRequest starts the span of a request, a consumer span named
// "lionbus.<verb>" whose parent is the request's traceparent, and returns
// the context to run it with (its traceparent is the span's) and the
// function that ends the span with the request's outcome: its error (nil
// when it succeeded), recorded as the code "ok" or the error's code.
func StartRequest(ctx context.Context, tr trace.Tracer, op ops.Request, traceParent, traceState string) (context.Context, func(err error)) {
	ctx = Remote(ctx, traceParent, traceState)
	ctx, span := tr.Start(ctx, "lionbus."+op.Verb, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(AttrRequestID.String(op.ID), AttrVerb.String(op.Verb),
			AttrBranchID.String(op.BranchID), AttrAttempt.Int(op.Attempt)))
	return Propagate(ctx), func(err error) {
		code := "ok"
		if err != nil {
			c, _, _ := protocol.ErrorCode(err)
			code = string(c)
			span.SetStatus(codes.Error, code)
		}
		span.SetAttributes(AttrCode.String(code))
		span.End()
	}
}

// Observer is an ops.Observer making a span per model call and per tool
// call, children of the request's span.
type Observer struct {
	Tracer trace.Tracer
}

// ModelCall starts a client span for the call.
func (o Observer) ModelCall(ctx context.Context, call ops.Call) (context.Context, func(*ops.Completion, error)) {
	ctx, span := o.Tracer.Start(ctx, SpanModelCall, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrProvider.String(call.Model.Provider), AttrModel.String(call.Model.Model),
			AttrRequestID.String(call.RequestID), AttrBranchID.String(call.BranchID)))
	return Propagate(ctx), func(c *ops.Completion, err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else if c != nil && c.Usage != nil {
			span.SetAttributes(AttrTokensIn.Int(c.Usage.InputTokens), AttrTokensOut.Int(c.Usage.OutputTokens))
		}
		span.End()
	}
}

// ToolCall starts a client span for the invocation; the invocation carries
// the span's traceparent.
func (o Observer) ToolCall(ctx context.Context, call ops.ToolInvocation) (context.Context, func(ops.ToolOutcome, error)) {
	ctx, span := o.Tracer.Start(ctx, SpanToolCall, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrTool.String(call.Function), AttrCallID.String(call.IdempotencyKey),
			AttrRequestID.String(call.RequestID), AttrBranchID.String(call.BranchID)))
	return Propagate(ctx), func(out ops.ToolOutcome, err error) {
		switch {
		case err != nil:
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		case out.Error != nil:
			span.SetAttributes(AttrToolError.String(out.Error.Code))
			span.SetStatus(codes.Error, fmt.Sprintf("%s: %s", out.Error.Code, out.Error.Message))
		}
		span.End()
	}
}
