package protocol

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// TraceParentHeader is the plain NATS header that OpenTelemetry propagators
// use. On receive it is read when the event carries no traceparent
// extension; on a single hop the two carry the same context.
const TraceParentHeader = "traceparent"

// TraceStateHeader is the plain NATS header carrying the W3C tracestate
// that goes with TraceParentHeader.
const TraceStateHeader = "tracestate"

// ValidTraceParent reports whether s is a W3C Trace Context traceparent
// that lionbus propagates: "00-" + 32 lowercase hex trace id + "-" + 16
// lowercase hex parent id + "-" + 2 hex flags, with neither id all zeros.
// Later versions (not "ff") are accepted when their first 55 characters
// have that form and any rest starts with "-".
func ValidTraceParent(s string) bool {
	if len(s) < 55 {
		return false
	}
	version := s[0:2]
	if !isLowerHex(version) || version == "ff" {
		return false
	}
	if version == "00" && len(s) != 55 {
		return false
	}
	if len(s) > 55 && s[55] != '-' {
		return false
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	traceID, parentID, flags := s[3:35], s[36:52], s[53:55]
	return isLowerHex(traceID) && isLowerHex(parentID) && isLowerHex(flags) &&
		strings.Trim(traceID, "0") != "" && strings.Trim(parentID, "0") != ""
}

// NewTraceParent returns a new sampled traceparent with random trace and
// parent ids. The worker starts a trace this way for a request that arrived
// without one, so that everything the request causes shares one trace.
func NewTraceParent() string {
	var b [24]byte
	for {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		tp := "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
		if ValidTraceParent(tp) { // all-zero ids: astronomically unlikely, retry
			return tp
		}
	}
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// traceKey is the context key of the trace context of a request.
type traceKey struct{}

type traceValue struct{ parent, state string }

// ContextWithTraceParent returns ctx carrying the W3C traceparent and
// tracestate of the request being run. The [Worker] sets them on the
// context it passes to its Handler, so that what the request causes (the
// events of an [EventSink], for one) joins the request's trace.
func ContextWithTraceParent(ctx context.Context, traceParent, traceState string) context.Context {
	return context.WithValue(ctx, traceKey{}, traceValue{traceParent, traceState})
}

// TraceParentFromContext returns the traceparent and tracestate set by
// [ContextWithTraceParent] ("" when there are none).
func TraceParentFromContext(ctx context.Context) (traceParent, traceState string) {
	v, _ := ctx.Value(traceKey{}).(traceValue)
	return v.parent, v.state
}
