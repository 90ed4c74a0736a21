package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/schemas"
)

// decodedRequest returns a request decoded from a structured event.
func decodedRequest(t *testing.T, fields map[string]any) *protocol.Request {
	t.Helper()
	codec := newCodec(t, provision.Config{})
	req, err := codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.op.echo", Data: structured(t, fields)})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestEventBuilder_Result(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fields     map[string]any
		res        ops.Result
		wantBranch string
	}{
		{"request branch", map[string]any{"branchid": "b1", "traceparent": testTrace, "tracestate": "congo=t61rcWkgMzE"}, ops.Result{Value: json.RawMessage(`"hi"`), DurationMS: 3}, "b1"},
		{"result branch wins", map[string]any{"traceparent": testTrace}, ops.Result{Value: json.RawMessage(`{}`), BranchID: "new-b"}, "new-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := decodedRequest(t, tt.fields)
			ev, err := protocol.EventBuilder{Source: "/lionbus/worker/w1"}.Result(req, &tt.res)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type() != "lionbus.op.echo.result" || ev.Source() != "/lionbus/worker/w1" {
				t.Errorf("type %q source %q", ev.Type(), ev.Source())
			}
			if ev.ID() == "" || ev.ID() == req.ID() || ev.Time().IsZero() {
				t.Errorf("id %q (request %q) time %v: want a new id and a time", ev.ID(), req.ID(), ev.Time())
			}
			ext := ev.Extensions()
			if ext[protocol.ExtBranchID] != tt.wantBranch || ext[protocol.ExtTraceParent] != testTrace || ext[protocol.ExtRequestID] != "req-1" {
				t.Errorf("extensions = %v", ext)
			}
			if want, _ := tt.fields["tracestate"].(string); req.TraceState != want || (want != "" && ext[protocol.ExtTraceState] != want) {
				t.Errorf("extensions = %v", ext)
			}
			var got ops.Result
			if err := json.Unmarshal(ev.Data(), &got); err != nil {
				t.Fatal(err)
			}
			if string(got.Value) != string(tt.res.Value) || got.DurationMS != tt.res.DurationMS {
				t.Errorf("data = %s", ev.Data())
			}
		})
	}
}

func TestEventBuilder_Error_matches_schema(t *testing.T) {
	t.Parallel()
	req := decodedRequest(t, map[string]any{"branchid": "b1"})
	ev, err := protocol.EventBuilder{}.Error(req, ops.CodeBranchNotFound, "branch b1 has no history")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type() != protocol.EventTypeError || ev.Source() != protocol.DefaultSource {
		t.Errorf("type %q source %q", ev.Type(), ev.Source())
	}
	if err := schemas.Validate(protocol.EventTypeError, ev.Data()); err != nil {
		t.Errorf("error data %s: %v", ev.Data(), err)
	}
	var d protocol.ErrorData
	if err := json.Unmarshal(ev.Data(), &d); err != nil {
		t.Fatal(err)
	}
	if d != (protocol.ErrorData{Code: "branch_not_found", Message: "branch b1 has no history", RequestID: "req-1"}) {
		t.Errorf("data = %+v", d)
	}
	// The request had no traceparent: decoding gave it one, and the answer
	// carries the same.
	if tp := ev.Extensions()[protocol.ExtTraceParent]; tp != req.TraceParent || !protocol.ValidTraceParent(req.TraceParent) {
		t.Errorf("traceparent %v, request %q", tp, req.TraceParent)
	}
}

func TestEventBuilder_Rejection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ee   protocol.EventError
	}{
		{"readable", protocol.EventError{Code: protocol.CodeInvalidData, Message: "data at /: bad", ID: "r1", ReplyTo: "lion.reply.r1", TraceParent: testTrace}},
		{"unreadable", protocol.EventError{Code: protocol.CodeMalformedEvent, Message: "body is not JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := protocol.EventBuilder{}.Rejection(&tt.ee)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemas.Validate(protocol.EventTypeError, ev.Data()); err != nil {
				t.Errorf("error data %s: %v", ev.Data(), err)
			}
			var d protocol.ErrorData
			_ = json.Unmarshal(ev.Data(), &d)
			if d.Code != tt.ee.Code || d.RequestID != tt.ee.ID {
				t.Errorf("data = %+v", d)
			}
			tp, _ := ev.Extensions()[protocol.ExtTraceParent].(string)
			if !protocol.ValidTraceParent(tp) || (tt.ee.TraceParent != "" && tp != tt.ee.TraceParent) {
				t.Errorf("traceparent = %q", tp)
			}
		})
	}
}

func TestEventBuilder_Request_decodes(t *testing.T) {
	t.Parallel()
	ev, err := protocol.EventBuilder{}.Request("op.echo", "", "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := protocol.Encode("lion.ops.op.echo", ev, protocol.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("ce-specversion") != "1.0" || msg.Header.Get("Nats-Msg-Id") != ev.ID() {
		t.Errorf("headers = %v", msg.Header)
	}
	req, err := newCodec(t, provision.Config{}).DecodeRequest(msg)
	if err != nil {
		t.Fatal(err)
	}
	if string(req.Data) != "{}" || req.TraceParent != ev.Extensions()[protocol.ExtTraceParent] {
		t.Errorf("request data %s trace %q", req.Data, req.TraceParent)
	}
}
