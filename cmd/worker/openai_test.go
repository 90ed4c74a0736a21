package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// workerTestKey is a distinctive API key that no output may contain.
const workerTestKey = "sk-worker-TESTKEY-81c2e4d0-never-print-me"

func TestOpenAIFlags_precedence(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantURL  string
		wantKey  string
		wantUsed bool
	}{
		{name: "nothing set"},
		{name: "SDK variables", env: map[string]string{"OPENAI_API_KEY": "k-sdk", "OPENAI_BASE_URL": "http://sdk/v1"},
			wantURL: "http://sdk/v1", wantKey: "k-sdk", wantUsed: true},
		{name: "LIONBUS variables win over the SDK's",
			env:     map[string]string{"OPENAI_API_KEY": "k-sdk", "LIONBUS_OPENAI_API_KEY": "k-lionbus", "OPENAI_BASE_URL": "http://sdk/v1"},
			wantURL: "http://sdk/v1", wantKey: "k-lionbus", wantUsed: true},
		{name: "flags win over both",
			args:    []string{"--openai-api-key", "k-flag", "--openai-base-url", "http://flag/v1"},
			env:     map[string]string{"OPENAI_API_KEY": "k-sdk", "LIONBUS_OPENAI_API_KEY": "k-lionbus", "LIONBUS_OPENAI_BASE_URL": "http://lionbus/v1"},
			wantURL: "http://flag/v1", wantKey: "k-flag", wantUsed: true},
		{name: "a base URL alone", args: []string{"--openai-base-url", "http://localhost:11434/v1"},
			wantURL: "http://localhost:11434/v1", wantUsed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			var c config
			fs := newFlagSet(&c, io.Discard)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := flagsFromEnv(fs, lookup); err != nil {
				t.Fatal(err)
			}
			openAIFromEnv(&c, lookup)
			if c.OpenAIBaseURL != tc.wantURL || c.OpenAIAPIKey != tc.wantKey || c.openAIEnabled() != tc.wantUsed {
				t.Errorf("base URL %q, key %q, enabled %v; want %q, %q, %v",
					c.OpenAIBaseURL, c.OpenAIAPIKey, c.openAIEnabled(), tc.wantURL, tc.wantKey, tc.wantUsed)
			}
		})
	}
}

func TestRun_openai_flags_never_print_the_key(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", workerTestKey)
	t.Setenv("LIONBUS_OPENAI_API_KEY", workerTestKey)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{name: "help", args: []string{"--help"}, wantCode: exitOK, want: "-openai-api-key"},
		{name: "bad base URL", args: []string{"--openai-base-url", "localhost:8000"}, wantCode: exitUsage,
			want: `--openai-base-url, --openai-api-key: openai: invalid configuration: base URL "localhost:8000" is not an absolute http or https URL`},
		{name: "a key that cannot be a header", args: []string{"--openai-api-key", workerTestKey + "\r\nX: y"}, wantCode: exitUsage,
			want: "the API key holds spaces or control characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tc.wantCode || !strings.Contains(out, tc.want) {
				t.Errorf("exit code %d, output %q; want %d and %q", code, out, tc.wantCode, tc.want)
			}
			if strings.Contains(out, workerTestKey) {
				t.Errorf("the API key is printed: %s", out)
			}
		})
	}
}

// The worker, given an OpenAI-compatible server (a local one that checks
// the request and first fails with a 500), serves a branch whose chat
// model is gpt-x of the "openai" provider, with options; the key, taken
// from OPENAI_API_KEY, reaches the server and no log line.
func TestRun_serves_openai_models(t *testing.T) {
	var mu sync.Mutex
	var attempts int
	var problems []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model               string            `json:"model"`
			Messages            []ops.ChatMessage `json:"messages"`
			Temperature         *float64          `json:"temperature"`
			MaxCompletionTokens int               `json:"max_completion_tokens"`
			Stop                []string          `json:"stop"`
		}
		err := json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		attempts++
		n := attempts
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions":
			problems = append(problems, r.Method+" "+r.URL.Path)
		case r.Header.Get("Authorization") != "Bearer "+workerTestKey:
			problems = append(problems, "wrong Authorization header")
		case err != nil || body.Model != "gpt-x" || len(body.Messages) != 2 ||
			body.Messages[0].Role != history.RoleSystem || body.Messages[0].Content != "Be brief." ||
			body.Messages[1].Role != history.RoleUser || !strings.Contains(body.Messages[1].Content, "ping") ||
			body.Temperature == nil || *body.Temperature != 0.2 || body.MaxCompletionTokens != 64 || len(body.Stop) != 1 || body.Stop[0] != "END":
			problems = append(problems, "unexpected body")
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
			return
		}
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-x",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"pong"}}],
			"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}`)
	}))
	defer api.Close()
	t.Setenv("OPENAI_API_KEY", workerTestKey)

	srv := bustest.NewServer(t)
	stdout, stderr, stop := runWorker(t, "--nats", srv.ClientURL(), "--prefix", "oai", "--openai-base-url", api.URL+"/v1",
		"--log-format", "json", "--log-level", "debug", "--name", "w1")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})

	nc, _ := bustest.Connect(t, srv)
	cl, err := client.New(nc, client.Config{Prefix: "oai"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The options travel through the branch's stored settings.
	model := map[string]any{"provider": "openai", "model": "gpt-x", "temperature": 0.2, "max_completion_tokens": 64, "stop": []string{"END"}}
	if _, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "b1", "system": "Be brief.", "chat_model": model}); err != nil {
		t.Fatal(err)
	}
	reply, err := cl.Do(ctx, "communicate", "b1", map[string]any{"instruction": "ping"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := reply.Result()
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `"pong"` || res.Usage == nil || res.Usage.TotalTokens != 8 {
		t.Errorf("result = %s, usage %+v; want \"pong\" and 8 tokens", res.Value, res.Usage)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit code = %d\nstderr:\n%s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts != 2 || len(problems) > 0 {
		t.Errorf("%d attempts, problems %q; want 2 attempts and none", attempts, problems)
	}
	logs := stderr.String()
	if !strings.Contains(logs, `"message":"model provider registered"`) || !strings.Contains(logs, `"message":"model call failed; retrying"`) {
		t.Errorf("logs lack the registration or the retry:\n%s", logs)
	}
	if strings.Contains(logs+stdout.String(), workerTestKey) {
		t.Errorf("the API key is in the output:\n%s", logs)
	}
}
