package openai

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
)

func TestDecodeResponse(t *testing.T) {
	t.Parallel()
	wrap := func(message string) string {
		return `{"id":"c","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":` + message + `}]}`
	}
	tests := []struct {
		name      string
		body      string
		wantText  string
		wantCalls []ops.ToolCall
		wantUsage *ops.Usage
		wantErr   error
	}{
		{name: "string content", body: wrap(`{"role":"assistant","content":"hi"}`), wantText: "hi"},
		{name: "null content", body: wrap(`{"role":"assistant","content":null}`)},
		{name: "missing content", body: wrap(`{"role":"assistant"}`)},
		{name: "text parts", body: wrap(`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]}`), wantText: "ab"},
		{name: "content of a wrong type", body: wrap(`{"role":"assistant","content":5}`), wantErr: ErrMalformedResponse},
		{name: "refusal", body: wrap(`{"role":"assistant","content":null,"refusal":"no"}`), wantText: "no"},
		{name: "content wins over refusal", body: wrap(`{"role":"assistant","content":"yes","refusal":"no"}`), wantText: "yes"},
		{
			name:      "arguments as a string",
			body:      wrap(`{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"x\":[1,\"y\"]}"}}]}`),
			wantCalls: []ops.ToolCall{{ID: "1", Name: "f", Arguments: map[string]any{"x": []any{1.0, "y"}}}},
		},
		{
			name:      "arguments as an object",
			body:      wrap(`{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":{"x":1}}}]}`),
			wantCalls: []ops.ToolCall{{ID: "1", Name: "f", Arguments: map[string]any{"x": 1.0}}},
		},
		{
			name:      "empty and null arguments",
			body:      wrap(`{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":""}},{"id":"2","type":"function","function":{"name":"g","arguments":"null"}}]}`),
			wantCalls: []ops.ToolCall{{ID: "1", Name: "f"}, {ID: "2", Name: "g"}},
		},
		{name: "arguments not an object", body: wrap(`{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"[1]"}}]}`), wantErr: ErrToolArguments},
		{name: "arguments cut short", body: wrap(`{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}`), wantErr: ErrToolArguments},
		{name: "arguments a number", body: wrap(`{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":7}}]}`), wantErr: ErrToolArguments},
		{name: "tool call without a name", body: wrap(`{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"arguments":"{}"}}]}`), wantErr: ErrMalformedResponse},
		{name: "custom tool call", body: wrap(`{"role":"assistant","tool_calls":[{"id":"1","type":"custom","custom":{"name":"f","input":"x"}}]}`), wantErr: ErrMalformedResponse},
		{
			name:      "usage without total",
			body:      `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":4,"completion_tokens":5}}`,
			wantText:  "x",
			wantUsage: &ops.Usage{InputTokens: 4, OutputTokens: 5, TotalTokens: 9},
		},
		{name: "usage of a wrong type", body: `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":"many"}}`, wantErr: ErrMalformedResponse},
		{name: "no choices", body: `{"id":"c","choices":[]}`, wantErr: ErrNoChoices},
		{name: "choices missing", body: `{"id":"c"}`, wantErr: ErrNoChoices},
		{name: "an error with status 200", body: `{"error":{"message":"upstream failed"}}`, wantErr: ErrNoChoices},
		{name: "a list", body: `[{"choices":[]}]`, wantErr: ErrMalformedResponse},
		{name: "null", body: `null`, wantErr: ErrMalformedResponse},
		{name: "empty", body: "  \n", wantErr: ErrMalformedResponse},
		{name: "not JSON", body: "Internal error", wantErr: ErrMalformedResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := decodeResponse([]byte(tt.body), DefaultMaxRawBytes)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Text != tt.wantText || !reflect.DeepEqual(c.ToolCalls, tt.wantCalls) || !reflect.DeepEqual(c.Usage, tt.wantUsage) {
				t.Errorf("completion = %q %+v %+v, want %q %+v %+v", c.Text, c.ToolCalls, c.Usage, tt.wantText, tt.wantCalls, tt.wantUsage)
			}
			if !json.Valid(c.Raw) {
				t.Errorf("raw is not JSON: %s", c.Raw)
			}
		})
	}
}

func TestRawAnswer_bounds(t *testing.T) {
	t.Parallel()
	body := []byte(`{ "id" : "chatcmpl-1", "object":"chat.completion", "model":"m",
		"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"` + strings.Repeat("z", 300) + `"}}],
		"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`)
	tests := []struct {
		maxRaw   int
		wantNil  bool
		wantTrnc bool
	}{
		{maxRaw: 4096},
		{maxRaw: 300, wantTrnc: true},
		{maxRaw: 40, wantTrnc: true},
		{maxRaw: 10, wantNil: true},
		{maxRaw: 0, wantNil: true},
	}
	for _, tt := range tests {
		c, err := decodeResponse(body, tt.maxRaw)
		if err != nil {
			t.Fatal(err)
		}
		if tt.wantNil {
			if c.Raw != nil {
				t.Errorf("max %d: raw = %s, want none", tt.maxRaw, c.Raw)
			}
			continue
		}
		var raw map[string]any
		if len(c.Raw) > tt.maxRaw || json.Unmarshal(c.Raw, &raw) != nil || (raw["truncated"] == true) != tt.wantTrnc {
			t.Errorf("max %d: raw of %d bytes = %s", tt.maxRaw, len(c.Raw), c.Raw)
		}
		if !tt.wantTrnc && strings.Contains(string(c.Raw), " : ") {
			t.Errorf("max %d: raw is not compact: %s", tt.maxRaw, c.Raw)
		}
	}
}

func TestDecodeError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   StatusError
	}{
		{
			name: "OpenAI error", status: 400,
			body: `{"error":{"message":"bad","type":"invalid_request_error","param":"messages","code":"invalid_value"}}`,
			want: StatusError{StatusCode: 400, Message: "bad", Type: "invalid_request_error", Param: "messages", Code: "invalid_value"},
		},
		{name: "numeric code", status: 500, body: `{"error":{"message":"boom","code":500}}`, want: StatusError{StatusCode: 500, Message: "boom", Code: "500"}},
		{name: "error as a string", status: 404, body: `{"error":"model not found"}`, want: StatusError{StatusCode: 404, Message: "model not found"}},
		{name: "top-level message", status: 422, body: `{"message":"unprocessable"}`, want: StatusError{StatusCode: 422, Message: "unprocessable"}},
		{name: "plain text", status: 502, body: "  upstream down\n", want: StatusError{StatusCode: 502, Message: "upstream down"}},
		{name: "empty", status: 503, body: "", want: StatusError{StatusCode: 503}},
		{name: "long", status: 400, body: `{"error":{"message":"` + strings.Repeat("é", 400) + `"}}`,
			want: StatusError{StatusCode: 400, Message: strings.Repeat("é", 254) + "..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := decodeError(tt.status, []byte(tt.body)); *got != tt.want {
				t.Errorf("decodeError = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestStatusError_classes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    int
		want      error
		temporary bool
	}{
		{400, ErrRefused, false}, {401, ErrRefused, false}, {404, ErrRefused, false}, {408, ErrRefused, false},
		{429, ErrRateLimited, true}, {500, ErrServer, true}, {503, ErrServer, true},
	}
	for _, tt := range tests {
		e := &StatusError{StatusCode: tt.status}
		if !errors.Is(e, tt.want) || e.Temporary() != tt.temporary {
			t.Errorf("status %d: matches %v %v, temporary %v; want %v, %v", tt.status, errors.Is(e, tt.want), tt.want, e.Temporary(), tt.want, tt.temporary)
		}
	}
}
