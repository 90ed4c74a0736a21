package protocol_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/schemas"
)

// The tool hooks of act become lionbus.tool.* events whose data matches
// their schemas; each call's hooks have their own stable ids.
func TestEventBuilder_Signal_tool_hooks(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tool := func(i int) *ops.ToolSignal {
		return &ops.ToolSignal{Function: "add", CallID: ops.ToolCallKey("r1", i), Index: i, ArgsSummary: `{"x":1}`}
	}
	post := tool(0)
	post.ResultSummary, post.DurationMS = `{"sum":2}`, 3
	failed := tool(1)
	failed.DurationMS = 1
	tests := []struct {
		name  string
		s     ops.Signal
		typ   string
		token string
		data  string
	}{
		{"pre", ops.Signal{Type: ops.SignalToolPre, Tool: tool(0)}, protocol.EventTypeToolPre, "tool_pre",
			`{"verb":"act","branch_id":"b","request_id":"r1","time":"2026-03-01T12:00:00Z","tool":{"function":"add","call_id":"r1/tool/0","index":0,"args_summary":"{\"x\":1}"}}`},
		{"post", ops.Signal{Type: ops.SignalToolPost, Tool: post}, protocol.EventTypeToolPost, "tool_post",
			`{"verb":"act","branch_id":"b","request_id":"r1","time":"2026-03-01T12:00:00Z","tool":{"function":"add","call_id":"r1/tool/0","index":0,"args_summary":"{\"x\":1}","result_summary":"{\"sum\":2}","duration_ms":3}}`},
		{"error", ops.Signal{Type: ops.SignalToolError, Tool: failed, Err: &ops.Error{Code: "bad_input", Message: "x is required"}}, protocol.EventTypeToolError, "tool_error",
			`{"verb":"act","branch_id":"b","request_id":"r1","time":"2026-03-01T12:00:00Z","error":{"code":"bad_input","message":"x is required"},"tool":{"function":"add","call_id":"r1/tool/1","index":1,"args_summary":"{\"x\":1}","duration_ms":1}}`},
	}
	ids := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Verb, tt.s.BranchID, tt.s.RequestID, tt.s.Time = "act", "b", "r1", at
			ev, token, err := protocol.EventBuilder{Source: "/test"}.Signal(tt.s, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type() != tt.typ || token != tt.token {
				t.Fatalf("type %s token %s", ev.Type(), token)
			}
			var got, want any
			if err := json.Unmarshal(ev.Data(), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.data), &want); err != nil {
				t.Fatal(err)
			}
			if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
				t.Fatalf("data %s\nwant %s", g, w)
			}
			if err := schemas.Validate(ev.Type(), ev.Data()); err != nil {
				t.Fatal(err)
			}
			if ev.ID() != protocol.SignalID(tt.s) {
				t.Fatalf("id %s is not the signal's", ev.ID())
			}
		})
		tt.s.RequestID = "r1"
		ids[protocol.SignalID(tt.s)] = true
	}
	// A second call's tool.pre differs from the first's.
	other := ops.Signal{Type: ops.SignalToolPre, RequestID: "r1", Tool: tool(1)}
	if ids[protocol.SignalID(other)] || len(ids) != 3 {
		t.Fatalf("signal ids are not distinct per type and call: %v", ids)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
