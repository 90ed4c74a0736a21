package wire_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
)

func TestParseBatchLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		verb       string
		data       map[string]any
		err        string // a substring of the error; "" means none
	}{
		{name: "lionbus shape", line: `{"custom_id": "a", "verb": "communicate", "data": {"instruction": "x"}}`,
			verb: "communicate", data: map[string]any{"instruction": "x"}},
		{name: "openai shape", line: `{"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "gpt-4.1-mini", "temperature": 0.2, "max_tokens": 9,
			"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": [{"type": "text", "text": "second"}]}]}}`,
			verb: "chat", data: map[string]any{
				"instruction": "second", "guidance": "Be brief.", "context": []any{"user: first", "assistant: ok"},
				"chat_model": map[string]any{"provider": "openai", "model": "gpt-4.1-mini", "temperature": 0.2, "max_tokens": 9.0},
			}},
		{name: "openai shape naming a provider", line: `{"custom_id": "r2", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "scripted:echo", "messages": [{"role": "user", "content": "hi"}]}}`,
			verb: "chat", data: map[string]any{"instruction": "hi", "chat_model": map[string]any{"provider": "scripted", "model": "echo"}}},
		{name: "no custom_id", line: `{"verb": "chat", "data": {}}`, err: "custom_id is missing"},
		{name: "long custom_id", line: `{"custom_id": "` + strings.Repeat("x", 513) + `", "verb": "chat", "data": {}}`, err: "at most 512"},
		{name: "unknown field", line: `{"custom_id": "a", "verb": "chat", "data": {}, "extra": 1}`, err: "unknown field"},
		{name: "verb not batched", line: `{"custom_id": "a", "verb": "branch.delete", "data": {}}`, err: "cannot be batched"},
		{name: "data not an object", line: `{"custom_id": "a", "verb": "chat", "data": [1]}`, err: "JSON object"},
		{name: "no data", line: `{"custom_id": "a", "verb": "chat"}`, err: "JSON object"},
		{name: "both shapes", line: `{"custom_id": "a", "verb": "chat", "data": {}, "method": "POST", "url": "/v1/chat/completions", "body": {}}`, err: "either"},
		{name: "other endpoint", line: `{"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m"}}`, err: "only POST /v1/chat/completions"},
		{name: "no user message", line: `{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", "messages": [{"role": "system", "content": "x"}]}}`, err: "no user message"},
		{name: "no model", line: `{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "x"}]}}`, err: "body.model"},
		{name: "not JSON", line: `nope`, err: "bad batch line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, err := wire.ParseBatchLine([]byte(tc.line))
			if tc.err != "" {
				if err == nil || !errors.Is(err, wire.ErrBadBatchLine) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want ErrBadBatchLine with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var data map[string]any
			if err := json.Unmarshal(it.Data, &data); err != nil {
				t.Fatal(err)
			}
			if it.Verb != tc.verb || !reflect.DeepEqual(data, tc.data) {
				t.Fatalf("got %s %v, want %s %v", it.Verb, data, tc.verb, tc.data)
			}
		})
	}
}

func TestBatchIDs(t *testing.T) {
	k := wire.BatchItemKey("doc 1/ü")
	if len(k) != 24 || !wire.ValidID(k) || k == wire.BatchItemKey("doc 2") || k != wire.BatchItemKey("doc 1/ü") {
		t.Fatalf("item key %q", k)
	}
	long := strings.Repeat("b", wire.MaxBatchIDLength)
	if !wire.ValidBatchID(long) || wire.ValidBatchID(long+"b") || wire.ValidBatchID("a.b") {
		t.Fatal("ValidBatchID")
	}
	id := wire.BatchRequestID(long, k, 100000)
	if !wire.ValidID(id) || !wire.ValidID(id+"-c") {
		t.Fatalf("request id %q is not a valid id", id)
	}
}

func TestBatchCounts(t *testing.T) {
	c := wire.BatchCounts{Total: 10, Queued: 1, Running: 2, Succeeded: 3, Failed: 1, Canceled: 2, Expired: 1}
	if c.Sum() != 10 || c.Finished() != 7 {
		t.Fatalf("sum %d finished %d", c.Sum(), c.Finished())
	}
}

// ParseBatchLine never panics, and what it accepts has a batchable verb
// and a JSON object as data.
func FuzzParseBatchLine(f *testing.F) {
	f.Add([]byte(`{"custom_id": "a", "verb": "communicate", "data": {"instruction": "x"}}`))
	f.Add([]byte(`{"custom_id": "r", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "t"}, 3]}]}}`))
	f.Add([]byte(`{"custom_id": "", "verb": "chat", "data": null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		it, err := wire.ParseBatchLine(line)
		if err != nil {
			if !errors.Is(err, wire.ErrBadBatchLine) {
				t.Fatalf("error %v is not ErrBadBatchLine", err)
			}
			return
		}
		var data map[string]any
		if it.CustomID == "" || json.Unmarshal(it.Data, &data) != nil {
			t.Fatalf("accepted %q as %+v", line, it)
		}
	})
}
