package tools_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// operate offers a branch's registry tools to an OpenAI-compatible model
// in its native format (function tools with the registry's parameters
// schema), and the native tool call it answers runs over NATS.
func TestAcceptance_operate_offers_registry_tools_natively(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var body map[string]any
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		_ = json.Unmarshal(raw, &body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
			"message":{"role":"assistant","content":"{\"answer\":\"echoing\"}","tool_calls":[{"id":"call_1","type":"function",
			"function":{"name":"echo","arguments":"{\"text\":\"native\"}"}}]}}]}`)
	}))
	defer model.Close()
	prov, err := openai.New(openai.Config{BaseURL: model.URL + "/v1", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	b := bustest.New(t, provision.Config{})
	serveOn(t, b, tools.ServiceConfig{Compile: toolschema.Compile, Name: "echo-svc", Tools: []tools.Tool{echoTool("a")}})
	startWorkerWith(t, b, tools.InvokerConfig{}, nil, ops.NewProviders(map[string]ops.Provider{openai.Name: prov}))
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": "native", "tools": []string{"echo"}, "chat_model": "openai:m"}), nil)
	format := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}
	var got map[string]any
	bustest.MustResult(t, b.Do(t, "operate", "native", map[string]any{"instruction": "echo native", "response_format": format, "actions": true}), &got)
	resp := responses(t, got["action_responses"])
	if out, _ := json.Marshal(resp["echo"].Output); string(out) != `{"by":"a","echo":"native"}` {
		t.Fatalf("echo answered %s (value %v)", out, got)
	}

	mu.Lock()
	defer mu.Unlock()
	offered, _ := json.Marshal(body["tools"])
	var want any
	_ = json.Unmarshal([]byte(`[{"type":"function","function":{"name":"echo","description":"Echoes its text.","parameters":`+echoParams+`}}]`), &want)
	if w, _ := json.Marshal(want); string(offered) != string(w) {
		t.Fatalf("tools offered to the model %s, want %s", offered, w)
	}
}
