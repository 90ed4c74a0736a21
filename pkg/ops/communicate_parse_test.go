package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
)

// communicate parses its response with the parse stage: recovery, key
// matching and coercion happen before any reformat round (0021-D3-05).
func TestCommunicate_parse_stage_local(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":["Sure:\n`+"```json"+`\n{\"Answer\": \"42\"}\n`+"```"+`"]}}`)
	res := b.mustDo(t, "communicate", "main", `{"instruction":"q","response_format":{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}}`)
	if string(res.Value) != `{"answer":42}` || b.prov.count() != 1 || len(b.waits.all()) != 0 {
		t.Fatalf("value %s after %d calls and waits %v; want {\"answer\":42} from the local attempt", res.Value, b.prov.count(), b.waits.all())
	}
}

// The reformat rounds follow ADR-0022 D1's parse schedule: the local
// attempt is the first try, and the rounds wait 1 s, 1.85 s, 3.42 s.
func TestCommunicate_reformat_schedule(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		want  []time.Duration
	}{
		{"default", ``, []time.Duration{time.Second, 1850 * time.Millisecond, 3422500 * time.Microsecond}},
		{"request schedule", `,"retry_initial_delay":0.5,"retry_backoff":2`, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		{"no waits", `,"retry_initial_delay":0`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":["no","nope","{\"b\": 1}","[1]"]}}`)
			_, err := b.do(t, "communicate", "main", `{"instruction":"q","response_format":{"type":"object","required":["a"]}`+tt.extra+`}`)
			var oe *ops.Error
			if !errors.As(err, &oe) || oe.Code != ops.CodeParse {
				t.Fatalf("err = %v, want parse_failed", err)
			}
			// The last reply ([1]) is JSON that does not fit: the error says so
			// and quotes it; the stage's failure is wrapped.
			if !errors.Is(err, ops.ErrSchemaRejected) || !strings.Contains(oe.Message, "schema_rejected") || !strings.Contains(oe.Message, `text: "[1]"`) {
				t.Fatalf("message %q (err %v) does not name the last failure", oe.Message, err)
			}
			if got := b.waits.all(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("waits = %v, want %v", got, tt.want)
			}
			if b.prov.count() != 4 {
				t.Fatalf("model calls = %d, want 4", b.prov.count())
			}
		})
	}
}

func TestCommunicate_reformat_schedule_bounds(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
	for _, extra := range []string{`"retry_initial_delay":-1`, `"retry_initial_delay":11`, `"retry_backoff":0.5`, `"retry_backoff":4.5`} {
		_, err := b.eng.Do(context.Background(), ops.Request{ID: "bad", Verb: "communicate", BranchID: "main",
			Data: json.RawMessage(`{"instruction":"q",` + extra + `}`)})
		if code(err) != ops.CodeInvalidRequest {
			t.Errorf("%s: err = %v, want invalid_request", extra, err)
		}
	}
	if b.prov.count() != 0 {
		t.Fatalf("a refused request called the model")
	}
}

// A request cancelled while it waits for a reformat round fails as
// canceled and records nothing.
func TestCommunicate_cancelled_during_the_wait(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":["no","{\"a\": 1}"]}}`)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := b.waits
	eng, err := ops.NewEngine(ops.Config{Store: b.store, Providers: ops.NewProviders(map[string]ops.Provider{"scripted": b.prov}),
		Sleep: func(ctx context.Context, d time.Duration) error {
			_ = waiting.sleep(ctx, d)
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = eng.Do(ctx, ops.Request{ID: "c1", Verb: "communicate", BranchID: "main",
		Data: json.RawMessage(`{"instruction":"q","response_format":{"type":"object","required":["a"]}}`)})
	if code(err) != ops.CodeCanceled {
		t.Fatalf("err = %v, want canceled", err)
	}
	if n := len(b.branch(t, "main").Messages); n != 0 || b.prov.count() != 1 {
		t.Fatalf("%d messages recorded, %d model calls; want none recorded after the one call", n, b.prov.count())
	}
}

// 0022-D1-06, 0021-D3-04: parsing exists only with a response_format and
// validation on; skip_validation returns the text with no parse stage at
// all (no reformat round, no wait).
func TestCommunicate_skip_validation_has_no_parse_stage(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":["not json","{\"a\": 1}"]}}`)
	res := b.mustDo(t, "communicate", "main", `{"instruction":"q","skip_validation":true,"response_format":{"type":"object","required":["a"]}}`)
	if string(res.Value) != `"not json"` || b.prov.count() != 1 || len(b.waits.all()) != 0 {
		t.Fatalf("value %s, %d calls, waits %v; want the raw text from one call", res.Value, b.prov.count(), b.waits.all())
	}
}
