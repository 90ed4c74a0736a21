package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
)

// modelServer is an OpenAI-compatible Chat Completions server for worker
// processes (--openai-base-url): it answers each call with "ok <tag>",
// where the tag is the last user message's text after "say ", and
// counts, by tag, the calls it received, and, by branch (the tag's part
// before "/"), the calls running at the same time, and the most ever seen.
// A call takes delay, or until the worker gives up on it (the request
// context ends, which closes the connection); a call whose tag starts with
// "hold/" waits, besides, until release is called.
type modelServer struct {
	srv   *httptest.Server
	delay time.Duration
	// delayOf, when set, says how long the call of a tag takes instead.
	delayOf func(tag string) time.Duration

	holdMu sync.Mutex
	hold   chan struct{}

	mu      sync.Mutex
	calls   map[string]int // by tag
	running map[string]int // by branch
	maxRun  map[string]int // by branch
}

func newModelServer(t *testing.T, delay time.Duration) *modelServer {
	t.Helper()
	m := &modelServer{delay: delay, calls: map[string]int{}, running: map[string]int{}, maxRun: map[string]int{},
		hold: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// baseURL is what --openai-base-url takes.
func (m *modelServer) baseURL() string { return m.srv.URL + "/v1" }

func (m *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []ops.ChatMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	tag := body.Messages[len(body.Messages)-1].Content
	if i := strings.LastIndex(tag, "say "); i >= 0 {
		tag = tag[i+len("say "):]
	}
	branch, _, _ := strings.Cut(tag, "/")
	m.mu.Lock()
	m.calls[tag]++
	m.running[branch]++
	m.maxRun[branch] = max(m.maxRun[branch], m.running[branch])
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.running[branch]--
		m.mu.Unlock()
	}()
	delay := m.delay
	if m.delayOf != nil {
		delay = m.delayOf(tag)
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if strings.HasPrefix(tag, "hold/") {
		m.holdMu.Lock()
		hold := m.hold
		m.holdMu.Unlock()
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","model":"m",
		"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%q}}],
		"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, "ok "+tag))
}

// release lets the held calls answer (and holds the next ones again).
func (m *modelServer) release() {
	m.holdMu.Lock()
	defer m.holdMu.Unlock()
	close(m.hold)
	m.hold = make(chan struct{})
}

// callsOf returns how many calls tag had.
func (m *modelServer) callsOf(tag string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[tag]
}

// mostAtOnce returns the most calls of one branch that ran at the same
// time, over every branch, and that branch.
func (m *modelServer) mostAtOnce() (int, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, which := 0, ""
	for b, k := range m.maxRun {
		if k > n {
			n, which = k, b
		}
	}
	return n, which
}
