package bus_test

// operate end to end against a local OpenAI-compatible server: the real
// openai provider, registered in a worker started through bus.Start, talks
// the Chat Completions format to an httptest server that checks each
// request and answers as the API does.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
)

// e2eAPIKey is the key the provider sends; no answer may contain it.
const e2eAPIKey = "sk-e2e-TESTKEY-5f0c9a7e-never-answer-me"

// chatRequest is what the tests read of a Chat Completions request body.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
}

// fakeAPI is a local OpenAI-compatible server. Each request is checked
// (method, path, headers, body) and answered by the i-th (from 0) entry of
// answers, the last one repeating.
type fakeAPI struct {
	*httptest.Server
	mu       sync.Mutex
	times    []time.Time
	bodies   []chatRequest
	problems []string
}

// apiAnswer is one answer of a fakeAPI: a status, headers and a body.
type apiAnswer struct {
	status int
	header map[string]string
	body   string
}

func newFakeAPI(t *testing.T, answers ...apiAnswer) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body chatRequest
		raw, _ := io.ReadAll(r.Body)
		err := json.Unmarshal(raw, &body)
		f.mu.Lock()
		n := len(f.times)
		f.times = append(f.times, time.Now())
		f.bodies = append(f.bodies, body)
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions":
			f.problems = append(f.problems, "request "+r.Method+" "+r.URL.Path)
		case r.Header.Get("Authorization") != "Bearer "+e2eAPIKey:
			f.problems = append(f.problems, "wrong Authorization header")
		case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
			f.problems = append(f.problems, "Content-Type "+r.Header.Get("Content-Type"))
		case err != nil:
			f.problems = append(f.problems, fmt.Sprintf("body %s: %v", raw, err))
		case body.Model != "gpt-e2e" || body.Stream || len(body.Messages) == 0:
			f.problems = append(f.problems, fmt.Sprintf("body %s", raw))
		}
		f.mu.Unlock()
		a := answers[min(n, len(answers)-1)]
		w.Header().Set("Content-Type", "application/json")
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		io.WriteString(w, strings.ReplaceAll(a.body, "$KEY", strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
	}))
	t.Cleanup(f.Close)
	return f
}

// requests returns the times and bodies of the requests received, failing
// the test on any problem found in them.
func (f *fakeAPI) requests(t *testing.T) ([]time.Time, []chatRequest) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.problems) > 0 {
		t.Errorf("requests the API would refuse: %q", f.problems)
	}
	return slices.Clone(f.times), slices.Clone(f.bodies)
}

// completion is a successful Chat Completions answer whose message is text.
func completion(text string) apiAnswer {
	content, _ := json.Marshal(text)
	return apiAnswer{status: http.StatusOK, body: `{"id":"chatcmpl-e2e","object":"chat.completion","created":1767225600,"model":"gpt-e2e",
		"choices":[{"index":0,"finish_reason":"stop","logprobs":null,
			"message":{"role":"assistant","content":` + string(content) + `,"refusal":null}}],
		"usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160}}`}
}

// startOpenAIWorker starts a worker through bus.Start whose providers are
// the scripted one and an openai provider talking to api, serving tools.
func startOpenAIWorker(t *testing.T, b *bustest.Bus, api *fakeAPI, tools ops.Invoker) {
	t.Helper()
	prov, err := openai.New(openai.Config{BaseURL: api.URL + "/v1", APIKey: e2eAPIKey})
	if err != nil {
		t.Fatal(err)
	}
	startToolWorkerWith(t, b, tools, bustest.Providers(t, map[string]ops.Provider{openai.Name: prov}))
}

// e2eFormat is the response_format of these tests' operate requests.
var e2eFormat = map[string]any{"title": "Work", "type": "object",
	"properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}}

// createOpenAIBranch creates branch id with the openai model gpt-e2e, a
// system message and the tools add and upper.
func createOpenAIBranch(t *testing.T, b *bustest.Bus, id string) {
	t.Helper()
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{
		"branch_id": id, "system": "You are terse.", "tools": []string{"add", "upper"},
		"chat_model": map[string]any{"provider": openai.Name, "model": "gpt-e2e"},
	}), nil)
}

func TestAcceptance_operate_with_actions_against_an_openai_compatible_server(t *testing.T) {
	t.Parallel()
	answer := "```json\n" + `{"answer": "done", "action_required": true, "action_requests": [` +
		`{"function": "add", "arguments": {"x": 1, "y": 2}}, {"function": "upper", "arguments": {"s": "hi"}}]}` + "\n```"
	api := newFakeAPI(t, completion(answer))
	b := bustest.New(t, provision.Config{})
	startOpenAIWorker(t, b, api, opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return map[string]any{"sum": x + y}, nil
		},
		"upper": func(_ context.Context, a map[string]any) (any, error) {
			s, _ := a["s"].(string)
			return strings.ToUpper(s), nil
		},
	}))
	createOpenAIBranch(t, b, "oai")

	r := b.Do(t, "operate", "oai", map[string]any{
		"instruction": "Add 1 and 2, and upper-case hi.", "response_format": e2eFormat, "actions": true, "handle_validation": "raise",
	})
	bustest.CheckSchema(t, r)
	var got map[string]any
	res := bustest.MustResult(t, r, &got)
	reqID, _ := r.Event.Extensions()[protocol.ExtRequestID].(string)
	if res.Usage == nil || res.Usage.InputTokens != 120 || res.Usage.OutputTokens != 40 {
		t.Errorf("usage %+v, want the API's 120 prompt and 40 completion tokens", res.Usage)
	}

	// One model call, shaped as the API expects: the branch's system
	// message, then the instruction with the request schema, which offers
	// the tools and asks for action_requests but never action_responses.
	_, bodies := api.requests(t)
	if len(bodies) != 1 {
		t.Fatalf("%d model calls, want 1", len(bodies))
	}
	msgs := bodies[0].Messages
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[0].Content != "You are terse." || msgs[1].Role != "user" {
		t.Fatalf("messages %+v: want the system message and one user message", msgs)
	}
	prompt := msgs[1].Content
	for _, want := range []string{"Add 1 and 2, and upper-case hi.", `"name": "add"`, `"name": "upper"`, "action_requests", `"title": "WorkRequest"`} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "action_responses") {
		t.Errorf("prompt asks for action_responses:\n%s", prompt)
	}

	// The value validates against the response schema: the caller's
	// field, the generated ones and action_responses, one per call.
	respSchema := `{"type":"object","required":["answer","action_responses"],"additionalProperties":false,"properties":{
		"answer":{"type":"string"},
		"action_required":{"type":["boolean","null"]},
		"action_requests":{"type":["array","null"],"items":{"type":"object","required":["function"],
			"properties":{"function":{"type":"string","minLength":1},"arguments":{"type":["object","null"]}}}},
		"action_responses":{"type":"array","minItems":2,"maxItems":2,"items":{"type":"object","required":["function","arguments","output"],
			"properties":{"function":{"type":"string"},"arguments":{"type":"object"},"error":false}}}}}`
	validateValue(t, respSchema, any(got))
	if out, _ := json.Marshal(got["action_responses"]); string(out) !=
		`[{"arguments":{"x":1,"y":2},"function":"add","output":{"sum":3}},{"arguments":{"s":"hi"},"function":"upper","output":"HI"}]` {
		t.Fatalf("action_responses %s", out)
	}
	if got["answer"] != "done" || got["action_required"] != true {
		t.Fatalf("value %v: want the model's answer and action_required", got)
	}

	// History: the branch's creation (its system message), the middle's
	// exchange (instruction, response), then the act stage's two requests
	// and two responses, each stage one event.
	var stages []string
	for _, ev := range b.History(t, "oai") {
		var kinds []string
		for _, m := range ev.Messages {
			kinds = append(kinds, string(m.Kind))
		}
		if ev.Type == history.EventMessages && strings.HasPrefix(ev.RequestID, reqID+"/act") {
			slices.Sort(kinds)
		}
		stages = append(stages, strings.Join(kinds, " "))
	}
	if want := []string{"system", "instruction assistant_response",
		"action_request action_request action_response action_response"}; !slices.Equal(stages, want) {
		t.Fatalf("history %q, want %q", stages, want)
	}

	// LION_EVENTS: run.start, the middle's two message.added, the four
	// tool hooks and the act stage's four message.added, then run.end.
	events := branchEvents(t, b, "oai", 1+2+4+4+1)
	count := map[string]int{}
	var types []string
	for _, ev := range events {
		var d protocol.SignalData
		if err := json.Unmarshal(ev.Data(), &d); err != nil {
			t.Fatal(err)
		}
		if d.Verb != "operate" || !strings.HasPrefix(d.RequestID, reqID) {
			t.Errorf("event %s data %s", ev.Type(), ev.Data())
		}
		types = append(types, ev.Type())
		count[ev.Type()]++
	}
	if types[0] != protocol.EventTypeRunStart || types[len(types)-1] != protocol.EventTypeRunEnd {
		t.Fatalf("events %v: want run.start first and run.end last", types)
	}
	if count[protocol.EventTypeToolPre] != 2 || count[protocol.EventTypeToolPost] != 2 || count[protocol.EventTypeMessageAdded] != 6 ||
		count[protocol.EventTypeRunEnd] != 1 || count[protocol.EventTypeRunFailed] != 0 || count[protocol.EventTypeToolError] != 0 {
		t.Fatalf("events %v", types)
	}
}

// A 429 with Retry-After: 1, then a 200: the provider waits as asked and
// retries, and the request is answered once, with the model's answer.
func TestAcceptance_openai_rate_limit_is_waited_out_over_the_bus(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t,
		apiAnswer{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"},
			body: `{"error":{"message":"Rate limit reached for gpt-e2e. Please try again in 1s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		completion(`{"answer": "after the wait"}`))
	b := bustest.New(t, provision.Config{})
	startOpenAIWorker(t, b, api, nil)
	createOpenAIBranch(t, b, "limited")
	answers := b.WatchAnswers(t)

	start := time.Now()
	r := b.Do(t, "operate", "limited", map[string]any{"instruction": "Say something.", "response_format": e2eFormat, "handle_validation": "raise"})
	took := time.Since(start)
	bustest.CheckSchema(t, r)
	var got map[string]any
	bustest.MustResult(t, r, &got)
	if got["answer"] != "after the wait" {
		t.Fatalf("value %v", got)
	}
	reqID, _ := r.Event.Extensions()[protocol.ExtRequestID].(string)

	times, _ := api.requests(t)
	if len(times) != 2 {
		t.Fatalf("%d API requests, want the 429 and the retry", len(times))
	}
	// Retry-After: 1 is a wait of a second; allow for the clocks' grain.
	const atLeast = time.Second - 20*time.Millisecond
	if wait := times[1].Sub(times[0]); wait < atLeast {
		t.Errorf("the retry came %s after the 429, want at least 1s", wait)
	}
	if took < atLeast {
		t.Errorf("answered after %s, want at least 1s", took)
	}
	// Nothing else is published for the request.
	time.Sleep(300 * time.Millisecond)
	answers.Sync(t)
	if n := answers.Count(reqID); n != 1 {
		t.Errorf("%d answers for %s, want 1", n, reqID)
	}
}

// A 401 is final: the request is answered provider_error at once, quoting
// the provider's message without the API key, even when the provider's
// message repeats it.
func TestAcceptance_openai_refused_key_answers_provider_error_over_the_bus(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t, apiAnswer{status: http.StatusUnauthorized,
		body: `{"error":{"message":"Incorrect API key provided: $KEY. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`})
	b := bustest.New(t, provision.Config{})
	startOpenAIWorker(t, b, api, nil)
	createOpenAIBranch(t, b, "refused")

	r := b.Do(t, "operate", "refused", map[string]any{"instruction": "Say something.", "response_format": e2eFormat, "actions": true})
	bustest.CheckSchema(t, r)
	if code := bustest.RemoteCode(t, r); code != ops.CodeProvider {
		t.Fatalf("code %s, want %s", code, ops.CodeProvider)
	}
	var re *client.RemoteError
	if !errors.As(r.Err(), &re) {
		t.Fatalf("answer %s", r.Data)
	}
	if !strings.Contains(re.Message, "Incorrect API key provided") || !strings.Contains(re.Message, "401") {
		t.Errorf("message %q does not quote the provider's answer", re.Message)
	}
	if strings.Contains(string(r.Data), e2eAPIKey) || strings.Contains(re.Message, e2eAPIKey) {
		t.Errorf("the answer holds the API key: %s", r.Data)
	}
	if times, _ := api.requests(t); len(times) != 1 {
		t.Errorf("%d API requests, want 1 (a 401 is not retried)", len(times))
	}
	// Nothing was recorded on the branch.
	if evs := b.History(t, "refused"); len(evs) != 1 {
		t.Errorf("%d history events, want only the branch's creation", len(evs))
	}
}
