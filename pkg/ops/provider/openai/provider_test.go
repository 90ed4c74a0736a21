package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
)

// testKey is a distinctive API key: no error, log line or printed value of
// these tests may contain it.
const testKey = "sk-lionbus-TESTKEY-3f9a7c1e-never-print-me"

// wireRequest is a Chat Completions request as the fake API reads it.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      bool            `json:"strict"`
		} `json:"function"`
	} `json:"tools"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	} `json:"response_format"`
	// All is every field of the body.
	All map[string]any `json:"-"`
}

// fakeAPI is a Chat Completions server that checks the shape of every
// request (method, path, headers, JSON body) and answers with respond.
type fakeAPI struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []wireRequest
	times    []time.Time
}

// newFakeAPI starts a fake API whose handler respond gets the attempt
// number (from 1) of each request.
func newFakeAPI(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, attempt int)) *fakeAPI {
	t.Helper()
	api := &fakeAPI{}
	api.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, problem := readRequest(r)
		if problem != "" {
			t.Errorf("bad request: %s", problem)
			http.Error(w, `{"error":{"message":"fake API: `+problem+`"}}`, http.StatusTeapot)
			return
		}
		api.mu.Lock()
		api.requests = append(api.requests, req)
		api.times = append(api.times, time.Now())
		attempt := len(api.requests)
		api.mu.Unlock()
		respond(w, r, attempt)
	}))
	t.Cleanup(api.srv.Close)
	return api
}

// readRequest checks the request's method, path and headers and decodes
// its body; problem says what is wrong.
func readRequest(r *http.Request) (req wireRequest, problem string) {
	switch {
	case r.Method != http.MethodPost:
		return req, "method " + r.Method
	case r.URL.Path != "/v1/chat/completions":
		return req, "path " + r.URL.Path
	case r.Header.Get("Authorization") != "Bearer "+testKey:
		return req, "missing or wrong Authorization header"
	case r.Header.Get("Content-Type") != "application/json":
		return req, "Content-Type " + r.Header.Get("Content-Type")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return req, "reading body: " + err.Error()
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, "body: " + err.Error()
	}
	if err := json.Unmarshal(body, &req.All); err != nil {
		return req, "body: " + err.Error()
	}
	if req.Model == "" || len(req.Messages) == 0 {
		return req, "no model or no messages"
	}
	return req, ""
}

func (a *fakeAPI) baseURL() string { return a.srv.URL + "/v1" }

// attempts returns how many requests reached the API.
func (a *fakeAPI) attempts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.requests)
}

func (a *fakeAPI) request(i int) wireRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests[i]
}

// answer writes body as a JSON answer with status.
func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// Answers in the API's own format.
const (
	textAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-x-2025",
 "choices":[{"index":0,"finish_reason":"stop","logprobs":null,
   "message":{"role":"assistant","content":"Hello there.","refusal":null,"annotations":[]}}],
 "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,
   "prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},
   "completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
 "service_tier":"default","system_fingerprint":"fp_1"}`
	toolCallsAnswer = `{"id":"chatcmpl-2","object":"chat.completion","created":1700000001,"model":"gpt-x-2025",
 "choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,
   "message":{"role":"assistant","content":null,"refusal":null,"annotations":[],
     "tool_calls":[
       {"id":"call_a","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}},
       {"id":"call_b","type":"function","function":{"name":"lookup","arguments":"{\"query\":\"weather in Oslo\",\"limit\":3}"}}]}}],
 "usage":{"prompt_tokens":120,"completion_tokens":20,"total_tokens":140}}`
	overloaded = `{"error":{"message":"The server is overloaded, please retry.","type":"server_error","param":null,"code":null}}`
)

// newProvider returns a provider for api with cfg's other fields.
func newProvider(t *testing.T, api *fakeAPI, cfg openai.Config) *openai.Provider {
	t.Helper()
	cfg.BaseURL = api.baseURL()
	cfg.APIKey = testKey
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// call is a model call with a system message and two turns.
func call(model history.ModelRef) ops.Call {
	return ops.Call{
		Model: model,
		Messages: ops.PromptOf([]ops.ChatMessage{
			{Role: history.RoleSystem, Content: "Be brief."},
			{Role: history.RoleUser, Content: "Instruction:\nhi"},
			{Role: history.RoleAssistant, Content: "Hi."},
			{Role: history.RoleUser, Content: "Instruction:\nhello"},
		}...),
		Instruction: "hello", BranchID: "b1", RequestID: "r1", Attempt: 1,
	}
}

func modelRef(t *testing.T, ref string) history.ModelRef {
	t.Helper()
	var m history.ModelRef
	if err := json.Unmarshal([]byte(ref), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkNoKey fails when the API key appears in err, in any error of its
// chain or in its printed forms.
func checkNoKey(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, testKey) {
			t.Errorf("the API key appears in the error: %s", s)
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		checkNoKey(t, u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			checkNoKey(t, e)
		}
	}
}

func TestProvider_Complete_request_shape(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`
	params := `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`
	tests := []struct {
		name  string
		ref   string
		tools []ops.ToolSpec
		rf    json.RawMessage
		check func(t *testing.T, req wireRequest)
	}{
		{
			name: "string reference: model and messages only",
			ref:  `"openai:gpt-x"`,
			check: func(t *testing.T, req wireRequest) {
				if len(req.All) != 2 || req.Tools != nil || req.ResponseFormat != nil {
					t.Errorf("body fields = %v, want model and messages only", req.All)
				}
			},
		},
		{
			name: "options are sent as they are",
			ref: `{"provider":"openai","model":"gpt-x","temperature":0.2,"max_completion_tokens":256,"max_tokens":300,
				"top_p":0.9,"seed":7,"stop":["\n\n","END"],"presence_penalty":0.5,"user":"u1","top_k":40}`,
			check: func(t *testing.T, req wireRequest) {
				want := map[string]any{"temperature": 0.2, "max_completion_tokens": 256.0, "max_tokens": 300.0, "top_p": 0.9,
					"seed": 7.0, "presence_penalty": 0.5, "user": "u1", "top_k": 40.0}
				for k, v := range want {
					if req.All[k] != v {
						t.Errorf("%s = %v, want %v", k, req.All[k], v)
					}
				}
				if stop, _ := req.All["stop"].([]any); len(stop) != 2 || stop[0] != "\n\n" || stop[1] != "END" {
					t.Errorf("stop = %#v", req.All["stop"])
				}
			},
		},
		{
			name:  "tools and response format",
			ref:   `"openai:gpt-x"`,
			tools: []ops.ToolSpec{{Name: "add", Description: "Add two ints", Parameters: json.RawMessage(params)}, {Name: "now"}},
			rf:    json.RawMessage(schema),
			check: func(t *testing.T, req wireRequest) {
				if len(req.Tools) != 2 {
					t.Fatalf("tools = %+v", req.Tools)
				}
				add, now := req.Tools[0], req.Tools[1]
				if add.Type != "function" || add.Function.Name != "add" || add.Function.Description != "Add two ints" ||
					!jsonEqual(add.Function.Parameters, params) || add.Function.Strict {
					t.Errorf("tool 0 = %+v", add)
				}
				if now.Type != "function" || now.Function.Name != "now" || now.Function.Parameters != nil {
					t.Errorf("tool 1 = %+v", now)
				}
				rf := req.ResponseFormat
				if rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != openai.DefaultSchemaName ||
					!jsonEqual(rf.JSONSchema.Schema, schema) || rf.JSONSchema.Strict == nil || *rf.JSONSchema.Strict {
					t.Errorf("response_format = %+v", rf)
				}
			},
		},
		{
			name:  "strict and schema name options shape the schemas and are not sent",
			ref:   `{"provider":"openai","model":"gpt-x","strict":true,"schema_name":"answer"}`,
			tools: []ops.ToolSpec{{Name: "add", Parameters: json.RawMessage(params)}},
			rf:    json.RawMessage(schema),
			check: func(t *testing.T, req wireRequest) {
				if _, ok := req.All["strict"]; ok {
					t.Errorf("strict was sent as a request field")
				}
				if _, ok := req.All["schema_name"]; ok {
					t.Errorf("schema_name was sent as a request field")
				}
				if !req.Tools[0].Function.Strict {
					t.Errorf("tool not strict")
				}
				if js := req.ResponseFormat.JSONSchema; js.Name != "answer" || js.Strict == nil || !*js.Strict {
					t.Errorf("json_schema = %+v", js)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusOK, textAnswer)
			})
			c := call(modelRef(t, tt.ref))
			c.Tools, c.ResponseFormat = tt.tools, tt.rf
			if _, err := newProvider(t, api, openai.Config{}).Complete(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			req := api.request(0)
			if req.Model != "gpt-x" {
				t.Errorf("model = %q", req.Model)
			}
			var got []string
			for _, m := range req.Messages {
				got = append(got, m.Role+"="+m.Content)
			}
			want := []string{"system=Be brief.", "user=Instruction:\nhi", "assistant=Hi.", "user=Instruction:\nhello"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("messages = %q, want %q", got, want)
			}
			tt.check(t, req)
		})
	}
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

func TestProvider_Complete_answers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		cfg    openai.Config
		check  func(t *testing.T, c *ops.Completion)
		status int
	}{
		{
			name: "text with usage",
			body: textAnswer,
			check: func(t *testing.T, c *ops.Completion) {
				if c.Text != "Hello there." || len(c.ToolCalls) != 0 {
					t.Errorf("text %q, tool calls %v", c.Text, c.ToolCalls)
				}
				if c.Usage == nil || *c.Usage != (ops.Usage{InputTokens: 12, OutputTokens: 3, TotalTokens: 15}) {
					t.Errorf("usage = %+v", c.Usage)
				}
				var raw map[string]any
				if err := json.Unmarshal(c.Raw, &raw); err != nil || raw["id"] != "chatcmpl-1" || raw["system_fingerprint"] != "fp_1" {
					t.Errorf("raw = %s (%v)", c.Raw, err)
				}
			},
		},
		{
			name: "two tool calls",
			body: toolCallsAnswer,
			check: func(t *testing.T, c *ops.Completion) {
				if c.Text != "" || len(c.ToolCalls) != 2 {
					t.Fatalf("text %q, tool calls %+v", c.Text, c.ToolCalls)
				}
				add, lookup := c.ToolCalls[0], c.ToolCalls[1]
				if add.ID != "call_a" || add.Name != "add" || add.Arguments["a"] != 1.0 || add.Arguments["b"] != 2.0 {
					t.Errorf("call 0 = %+v", add)
				}
				if lookup.ID != "call_b" || lookup.Name != "lookup" || lookup.Arguments["query"] != "weather in Oslo" || lookup.Arguments["limit"] != 3.0 {
					t.Errorf("call 1 = %+v", lookup)
				}
				if c.Usage == nil || c.Usage.TotalTokens != 140 {
					t.Errorf("usage = %+v", c.Usage)
				}
			},
		},
		{
			name: "no usage",
			body: `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`,
			check: func(t *testing.T, c *ops.Completion) {
				if c.Text != "ok" || c.Usage != nil {
					t.Errorf("text %q usage %+v", c.Text, c.Usage)
				}
			},
		},
		{
			name: "a refusal is the text",
			body: `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}`,
			check: func(t *testing.T, c *ops.Completion) {
				if c.Text != "I can't help with that." {
					t.Errorf("text %q", c.Text)
				}
			},
		},
		{
			name: "a large answer keeps a summary as raw",
			body: `{"id":"chatcmpl-big","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"finish_reason":"length","message":{"role":"assistant","content":"` +
				strings.Repeat("word ", 400) + `"}}],"usage":{"prompt_tokens":1,"completion_tokens":400,"total_tokens":401}}`,
			cfg: openai.Config{MaxRawBytes: 512},
			check: func(t *testing.T, c *ops.Completion) {
				if len(c.Text) != 2000 || len(c.Raw) > 512 {
					t.Errorf("text of %d bytes, raw of %d bytes", len(c.Text), len(c.Raw))
				}
				var raw struct {
					Truncated bool   `json:"truncated"`
					ID        string `json:"id"`
					Choices   []struct {
						FinishReason string `json:"finish_reason"`
					} `json:"choices"`
					Usage struct {
						TotalTokens int `json:"total_tokens"`
					} `json:"usage"`
				}
				if err := json.Unmarshal(c.Raw, &raw); err != nil || !raw.Truncated || raw.ID != "chatcmpl-big" ||
					len(raw.Choices) != 1 || raw.Choices[0].FinishReason != "length" || raw.Usage.TotalTokens != 401 {
					t.Errorf("raw = %s (%v)", c.Raw, err)
				}
			},
		},
		{
			name: "the key quoted in an answer is redacted",
			body: `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"your key is ` + testKey + `"}}]}`,
			check: func(t *testing.T, c *ops.Completion) {
				if strings.Contains(c.Text, testKey) || strings.Contains(string(c.Raw), testKey) || !strings.Contains(c.Text, "[redacted]") {
					t.Errorf("text %q raw %s", c.Text, c.Raw)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusOK, tt.body)
			})
			c, err := newProvider(t, api, tt.cfg).Complete(context.Background(), call(modelRef(t, `"openai:gpt-x"`)))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestProvider_Complete_failures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg       openai.Config
		ref       string
		respond   func(w http.ResponseWriter, r *http.Request, attempt int)
		wantIs    error
		temporary bool
		attempts  int
		wantIn    []string
	}{
		{
			name: "429 with Retry-After, then success",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				if attempt == 1 {
					w.Header().Set("Retry-After", "0")
					answer(w, http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
					return
				}
				answer(w, http.StatusOK, textAnswer)
			},
			attempts: 2,
		},
		{
			name: "500s until the retry budget ends",
			cfg:  openai.Config{MaxRetries: 3},
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusInternalServerError, overloaded)
			},
			wantIs: openai.ErrServer, temporary: true, attempts: 4,
			wantIn: []string{"HTTP 500", "The server is overloaded, please retry.", "gave up after 4 attempts"},
		},
		{
			name: "503 with retries turned off",
			cfg:  openai.Config{MaxRetries: -1},
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusServiceUnavailable, overloaded)
			},
			wantIs: openai.ErrServer, temporary: true, attempts: 1,
		},
		{
			name: "a 502 that is not JSON",
			cfg:  openai.Config{MaxRetries: 1},
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				w.WriteHeader(http.StatusBadGateway)
				io.WriteString(w, "<html>bad gateway</html>")
			},
			wantIs: openai.ErrServer, temporary: true, attempts: 2,
			wantIn: []string{"HTTP 502 Bad Gateway", "<html>bad gateway</html>"},
		},
		{
			name: "400 is final and quotes the message",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusBadRequest, `{"error":{"message":"Invalid value for 'temperature': expected a number <= 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`)
			},
			wantIs: openai.ErrRefused, attempts: 1,
			wantIn: []string{"HTTP 400 Bad Request", "Invalid value for 'temperature': expected a number <= 2.", "code invalid_value", "param temperature"},
		},
		{
			name: "401 quoting the key",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided: `+testKey+`.","type":"invalid_request_error","code":"invalid_api_key"}}`)
			},
			wantIs: openai.ErrRefused, attempts: 1,
			wantIn: []string{"HTTP 401", "Incorrect API key provided: [redacted]."},
		},
		{
			name: "a long error message is cut",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusNotFound, `{"error":{"message":"`+strings.Repeat("x", 2000)+`"}}`)
			},
			wantIs: openai.ErrRefused, attempts: 1,
			wantIn: []string{"HTTP 404", strings.Repeat("x", openai.MaxErrorMessageLen-3) + "..."},
		},
		{
			name: "Retry-After beyond MaxRetryWait ends the retries",
			cfg:  openai.Config{MaxRetryWait: time.Second},
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				w.Header().Set("Retry-After", "120")
				answer(w, http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`)
			},
			wantIs: openai.ErrRateLimited, temporary: true, attempts: 1,
			wantIn: []string{"slow down", "retry after 2m0s"},
		},
		{
			name: "a Retry-After past the call's deadline ends the retries",
			cfg:  openai.Config{Timeout: 2 * time.Second},
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				w.Header().Set("Retry-After", "10")
				answer(w, http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`)
			},
			wantIs: openai.ErrRateLimited, temporary: true, attempts: 1,
			wantIn: []string{"would pass the call's deadline"},
		},
		{
			name: "a dropped connection is retried",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				if attempt == 1 {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err == nil {
						conn.Close()
					}
					return
				}
				answer(w, http.StatusOK, textAnswer)
			},
			attempts: 2,
		},
		{
			name: "dropped connections until the budget ends",
			cfg:  openai.Config{MaxRetries: 1},
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
			},
			wantIs: openai.ErrConnection, temporary: true, attempts: 2,
		},
		{
			name: "oversize body",
			cfg:  openai.Config{MaxResponseBytes: 1024},
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusOK, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"`+strings.Repeat("a", 4096)+`"}}]}`)
			},
			wantIs: openai.ErrResponseTooLarge, attempts: 1,
			wantIn: []string{"1024 bytes"},
		},
		{
			name: "malformed body",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusOK, `<html>not an API</html>`)
			},
			wantIs: openai.ErrMalformedResponse, attempts: 1,
			wantIn: []string{"<html>not an API</html>"},
		},
		{
			name: "truncated JSON body",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusOK, textAnswer[:80])
			},
			wantIs: openai.ErrMalformedResponse, attempts: 1,
		},
		{
			name: "empty body",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				w.WriteHeader(http.StatusOK)
			},
			wantIs: openai.ErrMalformedResponse, attempts: 1,
		},
		{
			name: "empty choices",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusOK, `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`)
			},
			wantIs: openai.ErrNoChoices, attempts: 1,
		},
		{
			name: "malformed tool arguments",
			respond: func(w http.ResponseWriter, r *http.Request, attempt int) {
				answer(w, http.StatusOK, `{"id":"x","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
					"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1,"}}]}}]}`)
			},
			wantIs: openai.ErrToolArguments, attempts: 1,
			wantIn: []string{`"add"`, `{\"a\":1,`},
		},
		{
			name:     "an option of the wrong type is refused before sending",
			ref:      `{"provider":"openai","model":"gpt-x","temperature":"hot"}`,
			wantIs:   openai.ErrInvalidCall,
			attempts: 0,
			wantIn:   []string{`"temperature" must be a number, got a string`},
		},
		{
			name:   "streaming is refused",
			ref:    `{"provider":"openai","model":"gpt-x","stream":true}`,
			wantIs: openai.ErrInvalidCall,
		},
		{
			name:   "a reference without a model",
			ref:    `{"provider":"openai"}`,
			wantIs: openai.ErrInvalidCall,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			respond := tt.respond
			if respond == nil {
				respond = func(w http.ResponseWriter, r *http.Request, attempt int) { answer(w, http.StatusOK, textAnswer) }
			}
			api := newFakeAPI(t, respond)
			ref := tt.ref
			if ref == "" {
				ref = `"openai:gpt-x"`
			}
			c, err := newProvider(t, api, tt.cfg).Complete(context.Background(), call(modelRef(t, ref)))
			checkNoKey(t, err)
			t.Logf("error: %v", err)
			if got := api.attempts(); got != tt.attempts {
				t.Errorf("attempts = %d, want %d", got, tt.attempts)
			}
			if tt.wantIs == nil {
				if err != nil || c.Text != "Hello there." {
					t.Fatalf("completion %+v, error %v", c, err)
				}
				return
			}
			var pe *ops.ProviderError
			if !errors.As(err, &pe) || !errors.Is(err, tt.wantIs) || pe.Temporary != tt.temporary || pe.Provider != openai.Name {
				t.Fatalf("err = %v (%#v), want a provider error (temporary %v) matching %v", err, err, tt.temporary, tt.wantIs)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestProvider_Complete_status_error_fields(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		w.Header().Set("Retry-After", "3600")
		answer(w, http.StatusTooManyRequests, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	})
	_, err := newProvider(t, api, openai.Config{}).Complete(context.Background(), call(modelRef(t, `"openai:gpt-x"`)))
	var se *openai.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *StatusError", err)
	}
	want := openai.StatusError{StatusCode: 429, Message: "You exceeded your current quota.", Type: "insufficient_quota",
		Code: "insufficient_quota", RetryAfter: time.Hour}
	if *se != want || !se.Temporary() || !errors.Is(se, openai.ErrRateLimited) {
		t.Errorf("status error = %+v, want %+v", *se, want)
	}
}

// The first attempt is answered 429 with Retry-After: 1; the second comes
// no sooner than a second later.
func TestProvider_Complete_honours_Retry_After(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		if attempt == 1 {
			w.Header().Set("Retry-After", "1")
			answer(w, http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached"}}`)
			return
		}
		answer(w, http.StatusOK, textAnswer)
	})
	c, err := newProvider(t, api, openai.Config{}).Complete(context.Background(), call(modelRef(t, `"openai:gpt-x"`)))
	if err != nil || c.Text != "Hello there." {
		t.Fatalf("completion %+v, error %v", c, err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.times) != 2 {
		t.Fatalf("attempts = %d, want 2", len(api.times))
	}
	if gap := api.times[1].Sub(api.times[0]); gap < 900*time.Millisecond {
		t.Errorf("second attempt %s after the first, want at least the 1s Retry-After asked for", gap)
	}
}

// A server that never answers: the call ends at Config.Timeout with a
// temporary ErrTimeout, the server sees the request abandoned and no
// goroutine is left behind. (Not parallel: it counts goroutines.)
func TestProvider_Complete_timeout(t *testing.T) {
	released := make(chan struct{}, 1)
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		<-r.Context().Done()
		released <- struct{}{}
	})
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	p := newProvider(t, api, openai.Config{Timeout: 200 * time.Millisecond, HTTPClient: &http.Client{Transport: transport}})

	before := runtime.NumGoroutine()
	_, err := p.Complete(context.Background(), call(modelRef(t, `"openai:gpt-x"`)))
	checkNoKey(t, err)
	var pe *ops.ProviderError
	if !errors.As(err, &pe) || !pe.Temporary || !errors.Is(err, openai.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a temporary provider error matching ErrTimeout and context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Errorf("err = %q, want it to say it timed out after 200ms", err)
	}
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler never saw the request abandoned")
	}
	transport.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before the call, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A call that runs out of time after a failed attempt says how that
// attempt failed.
func TestProvider_Complete_timeout_names_the_previous_failure(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		if attempt == 1 {
			answer(w, http.StatusBadGateway, `{"error":{"message":"upstream hiccup"}}`)
			return
		}
		<-r.Context().Done()
	})
	_, err := newProvider(t, api, openai.Config{Timeout: 300 * time.Millisecond}).Complete(context.Background(), call(modelRef(t, `"openai:gpt-x"`)))
	checkNoKey(t, err)
	if !errors.Is(err, openai.ErrTimeout) || !strings.Contains(err.Error(), `the previous attempt failed: HTTP 502 Bad Gateway: "upstream hiccup"`) {
		t.Fatalf("err = %v", err)
	}
}

// Each retry is logged, without the API key even when the provider's
// message quotes it.
func TestProvider_Complete_logs_retries(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		if attempt == 1 {
			answer(w, http.StatusInternalServerError, `{"error":{"message":"failed for key `+testKey+`"}}`)
			return
		}
		answer(w, http.StatusOK, textAnswer)
	})
	var logs syncBuffer
	log := zerolog.New(&logs)
	if _, err := newProvider(t, api, openai.Config{Logger: log}).Complete(context.Background(), call(modelRef(t, `"openai:gpt-x"`))); err != nil {
		t.Fatal(err)
	}
	got := logs.String()
	if !strings.Contains(got, `"message":"model call failed; retrying"`) || !strings.Contains(got, `"attempt":1`) ||
		!strings.Contains(got, "failed for key [redacted]") || strings.Contains(got, testKey) {
		t.Errorf("logs = %s", got)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// When the caller's context ends, the error is the context's, not a
// provider error.
func TestProvider_Complete_caller_cancels(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		close(arrived)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := newProvider(t, api, openai.Config{}).Complete(ctx, call(modelRef(t, `"openai:gpt-x"`)))
	checkNoKey(t, err)
	var pe *ops.ProviderError
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Fatalf("err = %v, want context.Canceled and no provider error", err)
	}
}

// A cancelled context also interrupts a wait between attempts.
func TestProvider_Complete_cancel_during_backoff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		w.Header().Set("Retry-After", "20")
		answer(w, http.StatusTooManyRequests, `{"error":{"message":"wait"}}`)
		cancel()
	})
	_, err := newProvider(t, api, openai.Config{}).Complete(ctx, call(modelRef(t, `"openai:gpt-x"`)))
	if !errors.Is(err, context.Canceled) || api.attempts() != 1 {
		t.Fatalf("err = %v after %d attempts, want context.Canceled after 1", err, api.attempts())
	}
}

func TestNew_config(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     openai.Config
		wantErr string
	}{
		{name: "key and default URL", cfg: openai.Config{APIKey: testKey}},
		{name: "local server without key", cfg: openai.Config{BaseURL: "http://localhost:11434/v1"}},
		{name: "no key for the OpenAI API", cfg: openai.Config{}, wantErr: "an API key is needed"},
		{name: "relative URL", cfg: openai.Config{BaseURL: "/v1", APIKey: testKey}, wantErr: "not an absolute http or https URL"},
		{name: "other scheme", cfg: openai.Config{BaseURL: "ftp://host/v1", APIKey: testKey}, wantErr: "not an absolute http or https URL"},
		{name: "unparseable URL", cfg: openai.Config{BaseURL: "http://[::1", APIKey: testKey}, wantErr: "base URL"},
		{name: "key with a newline", cfg: openai.Config{APIKey: testKey + "\nX-Evil: 1"}, wantErr: "control characters"},
		{name: "too many retries", cfg: openai.Config{APIKey: testKey, MaxRetries: 11}, wantErr: "MaxRetries 11"},
		{name: "negative timeout", cfg: openai.Config{APIKey: testKey, Timeout: -time.Second}, wantErr: "Timeout -1s is negative"},
		{name: "negative body bound", cfg: openai.Config{APIKey: testKey, MaxResponseBytes: -1}, wantErr: "MaxResponseBytes -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := openai.New(tt.cfg)
			checkNoKey(t, err)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s := p.String(); strings.Contains(s, testKey) {
					t.Errorf("String() = %q", s)
				}
				return
			}
			if !errors.Is(err, openai.ErrConfig) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want ErrConfig saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfig_String_hides_the_key(t *testing.T) {
	t.Parallel()
	cfg := openai.Config{BaseURL: "https://user:secret@gateway.example/v1", APIKey: testKey}
	for _, s := range []string{cfg.String(), fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", &cfg)} {
		if strings.Contains(s, testKey) || strings.Contains(s, "secret") || !strings.Contains(s, "APIKey:[set]") {
			t.Errorf("printed config = %s", s)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(openai.EnvBaseURL, "http://127.0.0.1:8000/v1")
	t.Setenv(openai.EnvAPIKey, testKey)
	cfg := openai.ConfigFromEnv()
	if cfg.BaseURL != "http://127.0.0.1:8000/v1" || cfg.APIKey != testKey {
		t.Errorf("config from env = %v", cfg)
	}
}
