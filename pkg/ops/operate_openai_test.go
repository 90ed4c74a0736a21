package ops_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
)

// operate against a local OpenAI-compatible server: the model's answer
// asks for two tool calls, which run, and the result carries their
// responses. The prompt the server receives asks for the request schema,
// which has no action_responses (0022-D2-04).
func TestOperate_openai_compatible_server(t *testing.T) {
	answer := `{"answer":"done","action_required":true,"action_requests":[{"function":"add","arguments":{"x":1,"y":2}},{"function":"upper","arguments":{"s":"hi"}}]}`
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"m",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":`+string(content)+`}}],
			"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`)
	}))
	defer srv.Close()
	prov, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	a := newActBundle(t, ops.Config{Providers: ops.NewProviders(map[string]ops.Provider{openai.Name: prov})})
	a.mustDo(t, "branch.create", "", `{"branch_id":"b","tools":["add","upper"],"chat_model":"openai:m"}`)
	res, err := a.doID(t, "op1", "operate", "b", `{"instruction":"work","actions":true,"handle_validation":"raise",
		"response_format":{"title":"Work","type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}}`)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(res.Value, &v); err != nil {
		t.Fatal(err)
	}
	want := `[{"arguments":{"x":1,"y":2},"function":"add","output":{"sum":3}},{"arguments":{"s":"hi"},"function":"upper","output":"HI"}]`
	if got := compact(t, v["action_responses"]); got != want || v["answer"] != "done" {
		t.Fatalf("value %s", res.Value)
	}
	if res.Usage == nil || res.Usage.InputTokens != 9 {
		t.Fatalf("usage %+v", res.Usage)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("%d model calls, want 1", len(bodies))
	}
	if !strings.Contains(bodies[0], "action_requests") || strings.Contains(bodies[0], "action_responses") {
		t.Fatalf("the prompt does not ask for the request schema: %s", bodies[0])
	}
	k := strings.Fields(kinds(a.branch(t, "b").Messages))
	slices.Sort(k[min(2, len(k)):])
	if got := strings.Join(k, " "); got != "instruction assistant_response action_request action_request action_response action_response" {
		t.Fatalf("messages %s", got)
	}
}
