package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/anthropic"
)

const testKey = "sk-ant-TESTKEY-never-print"

// messagesAPI is a local Messages API: it checks each request and answers
// with whole (a JSON message) or, for "stream": true, the SSE events.
type messagesAPI struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	problems []string
}

func newMessagesAPI(t *testing.T, status int, whole string, events []string) *messagesAPI {
	t.Helper()
	api := &messagesAPI{}
	api.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		api.mu.Lock()
		if err := json.Unmarshal(raw, &body); err != nil {
			api.problems = append(api.problems, "body is not JSON")
		}
		for h, want := range map[string]string{"x-api-key": testKey, "anthropic-version": "2023-06-01", "content-type": "application/json"} {
			if got := r.Header.Get(h); got != want {
				api.problems = append(api.problems, fmt.Sprintf("header %s = %q", h, got))
			}
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			api.problems = append(api.problems, r.Method+" "+r.URL.Path)
		}
		api.bodies = append(api.bodies, body)
		api.mu.Unlock()
		if status != http.StatusOK {
			w.WriteHeader(status)
			fmt.Fprint(w, whole)
			return
		}
		if body["stream"] != true {
			w.Header().Set("content-type", "application/json")
			fmt.Fprint(w, whole)
			return
		}
		w.Header().Set("content-type", "text/event-stream")
		for _, e := range events {
			var typ struct{ Type string }
			_ = json.Unmarshal([]byte(e), &typ)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, e)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(api.Close)
	return api
}

var call = ops.Call{
	Model: history.ModelRef{Provider: "anthropic", Model: "claude-x", Options: map[string]any{"temperature": 0.2}},
	Messages: ops.PromptOf([]ops.ChatMessage{
		{Role: history.RoleSystem, Content: "You are terse."},
		{Role: history.RoleUser, Content: "What is 2+2?"},
		{Role: history.RoleUser, Content: "Use the tool."},
	}...),
	Tools: []ops.ToolSpec{{Name: "add", Description: "Add two ints", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)}},
}

const whole = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
 "content":[{"type":"text","text":"Calling add."},{"type":"tool_use","id":"toolu_01","name":"add","input":{"a":2,"b":2}}],
 "stop_reason":"tool_use","stop_sequence":null,
 "usage":{"input_tokens":50,"output_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`

var events = []string{
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":50,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"ping"}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Calling"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" add."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"add","input":{}}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 2, "}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"b\": 2}"}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}`,
	`{"type":"message_stop"}`,
}

// The request carries system, merged user turns and tools with their
// input_schema; the streamed call delivers the deltas as chunks and the
// same completion as the whole one.
func TestProvider_Complete_and_Stream(t *testing.T) {
	t.Parallel()
	api := newMessagesAPI(t, http.StatusOK, whole, events)
	p, err := anthropic.New(anthropic.Config{APIKey: testKey, BaseURL: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Complete(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []ops.Chunk
	streamed, err := p.Stream(context.Background(), call, func(c ops.Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.ToolCall{{ID: "toolu_01", Name: "add", Arguments: map[string]any{"a": 2.0, "b": 2.0}}}
	if got.Text != "Calling add." || !reflect.DeepEqual(got.ToolCalls, want) || got.Usage.OutputTokens != 30 {
		t.Errorf("Complete = %+v", got)
	}
	if streamed.Text != got.Text || !reflect.DeepEqual(streamed.ToolCalls, got.ToolCalls) || !reflect.DeepEqual(streamed.Usage, got.Usage) {
		t.Errorf("Stream = %+v, Complete = %+v", streamed, got)
	}
	var kinds []ops.ChunkKind
	var text strings.Builder
	for _, c := range chunks {
		kinds = append(kinds, c.Kind)
		if c.Kind == ops.ChunkText {
			text.WriteString(c.Content)
		}
	}
	wantKinds := []ops.ChunkKind{ops.ChunkText, ops.ChunkText, ops.ChunkToolUse, ops.ChunkResult}
	if !reflect.DeepEqual(kinds, wantKinds) || text.String() != got.Text || chunks[0].IsDelta || !chunks[1].IsDelta {
		t.Errorf("chunks %+v", chunks)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.problems) > 0 {
		t.Fatalf("request problems: %v", api.problems)
	}
	b := api.bodies[0]
	msgs, _ := b["messages"].([]any)
	tools, _ := b["tools"].([]any)
	if b["system"] != "You are terse." || b["model"] != "claude-x" || b["temperature"] != 0.2 || b["max_tokens"] != float64(anthropic.DefaultMaxTokens) ||
		len(msgs) != 1 || msgs[0].(map[string]any)["content"] != "What is 2+2?\n\nUse the tool." || len(tools) != 1 ||
		tools[0].(map[string]any)["input_schema"] == nil {
		t.Errorf("request body %v", b)
	}
	if api.bodies[1]["stream"] != true {
		t.Error("the streamed call did not ask for a stream")
	}
}

func TestProvider_errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		body      string
		events    []string
		temporary bool
		sentinel  error
	}{
		{name: "overloaded", status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, temporary: true, sentinel: anthropic.ErrAPI},
		{name: "bad key", status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + testKey + `"}}`, sentinel: anthropic.ErrAPI},
		{name: "error event mid-stream", status: 200, events: []string{events[0], events[1], events[3],
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, sentinel: anthropic.ErrAPI},
		{name: "cut stream", status: 200, events: events[:4], sentinel: anthropic.ErrConnection},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newMessagesAPI(t, tt.status, tt.body, tt.events)
			p, err := anthropic.New(anthropic.Config{APIKey: testKey, BaseURL: api.URL + "/v1"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Stream(context.Background(), call, func(ops.Chunk) error { return nil })
			var pe *ops.ProviderError
			if !errors.As(err, &pe) || !errors.Is(err, tt.sentinel) || pe.Temporary != tt.temporary {
				t.Fatalf("error %v (temporary %v), want %v temporary %v", err, pe != nil && pe.Temporary, tt.sentinel, tt.temporary)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Error("the key is in the error")
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{anthropic.EnvAPIKey: "k", anthropic.EnvBaseURL: "http://localhost:1"}
	c := anthropic.ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if c.APIKey != "k" || c.BaseURL != "http://localhost:1" {
		t.Errorf("%+v", c)
	}
	if _, err := anthropic.New(anthropic.Config{BaseURL: "ftp://x"}); !errors.Is(err, anthropic.ErrConfig) {
		t.Errorf("bad URL: %v", err)
	}
}
