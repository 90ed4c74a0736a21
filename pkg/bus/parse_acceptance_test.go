package bus_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// The parse verb end to end: requests on lion.ops.parse, answered
// lionbus.parse.result or lionbus.error with the stage's own codes, with
// nothing recorded on the branch.
func TestAcceptance_parse_verb(t *testing.T) {
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	r := b.Do(t, "branch.create", "", map[string]any{
		"branch_id": "parsing",
		"chat_model": map[string]any{"provider": "scripted", "replies": []any{
			`{"answer": 4}`, // the reformat round of "a reformat round"
		}},
	})
	bustest.MustResult(t, r, nil)
	schema := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"answer": map[string]any{"type": "integer"}},
		"required":             []any{"answer"},
		"additionalProperties": false,
	}
	req := func(text string, extra map[string]any) map[string]any {
		d := map[string]any{"text": text, "response_format": schema}
		for k, v := range extra {
			d[k] = v
		}
		return d
	}
	tests := []struct {
		name      string
		data      map[string]any
		wantValue string   // the value, compact, or ""
		wantCode  ops.Code // or ""
		opts      []client.SubmitOption
	}{
		{name: "a fenced reply with \"42\" for an integer field is recovered and coerced to 42",
			data: req("Sure!\n```json\n{\"Answer\": \"42\", \"note\": \"x\"}\n```", nil), wantValue: `{"answer":42}`},
		{name: "binary mode", data: req(`{'answer': '7',}`, nil), wantValue: `{"answer":7}`, opts: []client.SubmitOption{client.WithBinary()}},
		{name: "a reformat round", data: req("It is four.", nil), wantValue: `{"answer":4}`},
		{name: "no JSON", data: req("It is four.", map[string]any{"max_retries": 0}), wantCode: ops.CodeExtraction},
		{name: "JSON the schema rejects", data: req(`{"answer": "four"}`, map[string]any{"max_retries": 0}), wantCode: ops.CodeSchemaRejected},
		{name: "return_none", data: req("It is four.", map[string]any{"max_retries": 0, "handle_validation": "return_none"}), wantValue: `null`},
		{name: "return_value", data: req("It is four.", map[string]any{"max_retries": 0, "handle_validation": "return_value"}), wantValue: `"It is four."`},
		{name: "data the schema refuses", data: req("x", map[string]any{"handle_validation": "ignore"}), wantCode: protocol.CodeInvalidData},
		{name: "no response_format", data: map[string]any{"text": "{}"}, wantCode: protocol.CodeInvalidData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.Do(t, "parse", "parsing", tt.data, tt.opts...)
			bustest.CheckSchema(t, r)
			if tt.wantCode != "" {
				if got := bustest.RemoteCode(t, r); got != tt.wantCode {
					t.Fatalf("code = %s, want %s: %s", got, tt.wantCode, r.Data)
				}
				return
			}
			if r.Type != "lionbus.parse.result" {
				t.Fatalf("answer type %s: %s", r.Type, r.Data)
			}
			var v any
			res := bustest.MustResult(t, r, &v)
			if got, _ := json.Marshal(v); string(got) != tt.wantValue || res.BranchID != "parsing" {
				t.Fatalf("value %s on %q, want %s on parsing", got, res.BranchID, tt.wantValue)
			}
		})
	}
	// parse records nothing: the branch's history is its creation alone.
	if evs := b.History(t, "parsing"); len(evs) != 1 || evs[0].Type != history.EventCreated {
		t.Fatalf("history after parse requests: %d events", len(evs))
	}
	// An error quotes at most 200 characters of the text.
	r = b.Do(t, "parse", "parsing", req(strings.Repeat("z", 500), map[string]any{"max_retries": 0}))
	if err := r.Err(); err == nil || strings.Contains(err.Error(), strings.Repeat("z", 201)) {
		t.Fatalf("error %v should quote at most 200 characters", err)
	}
}
