package openai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

func TestBuildRequest(t *testing.T) {
	t.Parallel()
	user := ops.PromptOf(ops.ChatMessage{Role: history.RoleUser, Content: "q"})
	tests := []struct {
		name    string
		call    ops.Call
		want    string // the body, when it builds
		wantErr string // else part of the error
	}{
		{
			name: "minimal",
			call: ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m"}, Messages: user},
			want: `{"messages":[{"role":"user","content":"q"}],"model":"m"}`,
		},
		{
			name: "Go numbers, stream false, n 1",
			call: ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m", Options: map[string]any{
				"max_tokens": int64(5), "temperature": float32(0.5), "seed": json.Number("3"), "stream": false, "n": 1, "stop": []string{"x"},
			}}, Messages: user},
			want: `{"max_tokens":5,"messages":[{"role":"user","content":"q"}],"model":"m","n":1,"seed":3,"stop":["x"],"temperature":0.5}`,
		},
		{
			name: "tools without parameters, response format with a name",
			call: ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m", Options: map[string]any{"schema_name": "out_1"}}, Messages: user,
				Tools: []ops.ToolSpec{{Name: "now"}}, ResponseFormat: json.RawMessage(`{"type":"object"}`)},
			want: `{"messages":[{"role":"user","content":"q"}],"model":"m",` +
				`"response_format":{"type":"json_schema","json_schema":{"name":"out_1","schema":{"type":"object"},"strict":false}},` +
				`"tools":[{"type":"function","function":{"name":"now"}}]}`,
		},
		{name: "no model", call: ops.Call{Model: history.ModelRef{Provider: "openai"}, Messages: user}, wantErr: "names no model"},
		{name: "no messages", call: ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m"}}, wantErr: "no messages"},
		{name: "action role", call: ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m"},
			Messages: ops.PromptOf(ops.ChatMessage{Role: history.RoleAction, Content: "x"})}, wantErr: `message 0 has role "action"`},
		{name: "messages option", call: opts(map[string]any{"messages": []any{}}), wantErr: `"messages" is set by the provider`},
		{name: "stream_options", call: opts(map[string]any{"stream_options": map[string]any{}}), wantErr: `"stream_options" is set by the provider`},
		{name: "stream", call: opts(map[string]any{"stream": true}), wantErr: "streaming is not supported"},
		{name: "n 2", call: opts(map[string]any{"n": 2.0}), wantErr: `"n" must be 1`},
		{name: "fractional max_tokens", call: opts(map[string]any{"max_tokens": 1.5}), wantErr: `"max_tokens" must be an integer, got a number`},
		{name: "string seed", call: opts(map[string]any{"seed": "7"}), wantErr: `"seed" must be an integer, got a string`},
		{name: "stop list of numbers", call: opts(map[string]any{"stop": []any{"a", 1.0}}), wantErr: `"stop" must be a string or a list of strings`},
		{name: "strict not a bool", call: opts(map[string]any{"strict": "yes"}), wantErr: `"strict" must be true or false`},
		{name: "bad schema name", call: opts(map[string]any{"schema_name": "has space"}), wantErr: `"schema_name" must be 1 to 64`},
		{name: "tool without a name", call: ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m"}, Messages: user,
			Tools: []ops.ToolSpec{{Description: "x"}}}, wantErr: "tool 0 has no name"},
		{name: "tool parameters not JSON", call: ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m"}, Messages: user,
			Tools: []ops.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{`)}}}, wantErr: `tool "f" are not valid JSON`},
		{name: "schema not JSON", call: ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m"}, Messages: user,
			ResponseFormat: json.RawMessage(`{"type":`)}, wantErr: "schema is not valid JSON"},
		{name: "option that cannot be encoded", call: opts(map[string]any{"logit_bias": map[string]any{"1": make(chan int)}}), wantErr: "cannot be encoded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := buildRequest(tt.call, false)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidCall) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidCall saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("body:\n got %s\nwant %s", b, tt.want)
			}
		})
	}
}

// opts is a call to model "m" with options.
func opts(options map[string]any) ops.Call {
	return ops.Call{Model: history.ModelRef{Provider: "openai", Model: "m", Options: options},
		Messages: ops.PromptOf(ops.ChatMessage{Role: history.RoleUser, Content: "q"})}
}
