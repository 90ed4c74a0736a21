package openai_test

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
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
)

// sseAPI answers a streamed call with the given SSE events and an
// ordinary call with the same answer as one JSON body, as the Chat
// Completions API does.
func sseAPI(t *testing.T, events []string, whole string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil || r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+testKey {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		if body["stream"] != true {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, whole)
			return
		}
		if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
			http.Error(w, `{"error":{"message":"no include_usage"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			fl.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The streamed call delivers the text deltas as chunks and returns the
// same completion as the call without streaming.
func TestProvider_Stream(t *testing.T) {
	t.Parallel()
	head := `"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x"`
	tests := []struct {
		name      string
		events    []string
		whole     string
		wantText  []string
		wantTools int
	}{
		{
			name: "text",
			events: []string{
				`{` + head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
				`{` + head + `,"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}],"usage":null}`,
				`{` + head + `,"choices":[{"index":0,"delta":{"content":"lo, "},"finish_reason":null}],"usage":null,"obfuscation":"xx"}`,
				`{` + head + `,"choices":[{"index":0,"delta":{"content":"world."},"finish_reason":null}],"usage":null}`,
				`{` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
				`{` + head + `,"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
				`[DONE]`,
			},
			whole:    `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hello, world."}}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			wantText: []string{"Hel", "lo, ", "world."},
		},
		{
			name: "tool calls interleaved by index",
			events: []string{
				`{` + head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"add","arguments":""}}]},"finish_reason":null}]}`,
				`{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"now","arguments":""}}]},"finish_reason":null}]}`,
				`{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1,"}}]},"finish_reason":null}]}`,
				`{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":null}]}`,
				`{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"b\":2}"}}]},"finish_reason":null}]}`,
				`{` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`[DONE]`,
			},
			whole:     `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}},{"id":"call_b","type":"function","function":{"name":"now","arguments":"{}"}}]}}]}`,
			wantTools: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := sseAPI(t, tt.events, tt.whole)
			p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: testKey})
			if err != nil {
				t.Fatal(err)
			}
			call := ops.Call{Model: history.ModelRef{Provider: "openai", Model: "gpt-x"}, Messages: ops.PromptOf([]ops.ChatMessage{{Role: history.RoleUser, Content: "hi"}}...)}
			var chunks []ops.Chunk
			streamed, err := p.Stream(context.Background(), call, func(c ops.Chunk) error {
				chunks = append(chunks, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			whole, err := p.Complete(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			if streamed.Text != whole.Text || !reflect.DeepEqual(streamed.ToolCalls, whole.ToolCalls) || !reflect.DeepEqual(streamed.Usage, whole.Usage) {
				t.Errorf("streamed %+v, whole %+v", streamed, whole)
			}
			var text []string
			tools := 0
			for i, c := range chunks {
				switch c.Kind {
				case ops.ChunkText:
					text = append(text, c.Content)
					if c.IsDelta != (i > 0) {
						t.Errorf("chunk %d IsDelta %v", i, c.IsDelta)
					}
				case ops.ChunkToolUse:
					tools++
				}
			}
			if !reflect.DeepEqual(text, tt.wantText) || tools != tt.wantTools || chunks[len(chunks)-1].Kind != ops.ChunkResult {
				t.Errorf("chunks %+v", chunks)
			}
			if strings.Join(text, "") != whole.Text {
				t.Errorf("deltas %q do not make %q", text, whole.Text)
			}
		})
	}
}

// A stream cut after chunks were emitted fails for good (not retried),
// and an error of emit stops the stream.
func TestProvider_Stream_failures(t *testing.T) {
	t.Parallel()
	head := `"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-x"`
	cut := sseAPI(t, []string{`{` + head + `,"choices":[{"index":0,"delta":{"content":"Hel"}}]}`}, "")
	p, err := openai.New(openai.Config{BaseURL: cut.URL + "/v1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	call := ops.Call{Model: history.ModelRef{Provider: "openai", Model: "gpt-x"}, Messages: ops.PromptOf([]ops.ChatMessage{{Role: history.RoleUser, Content: "hi"}}...)}
	n := 0
	_, err = p.Stream(context.Background(), call, func(ops.Chunk) error { n++; return nil })
	var pe *ops.ProviderError
	if !errors.Is(err, openai.ErrStreamInterrupted) || !errors.As(err, &pe) || pe.Temporary || n != 1 {
		t.Errorf("cut stream: %v (%d chunks)", err, n)
	}
	stop := errors.New("stop")
	_, err = p.Stream(context.Background(), call, func(ops.Chunk) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("emit error: %v", err)
	}
}
