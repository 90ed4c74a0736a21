// Package openaitest is a local OpenAI-compatible Chat Completions server
// for tests that enforces its own rate limits as the API does: above a
// number of requests or tokens per window, or above a number of requests
// at once, it answers 429 with Retry-After-Ms and x-ratelimit-* headers.
// It records every request it admitted, so that a test can check the
// limits were kept in every window.
package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// Limits are the server's own limits, per model; a zero field is no
// limit.
type Limits struct {
	// Requests is the requests admitted per Window.
	Requests int
	// Tokens is the tokens (prompt + completion, as the server counts
	// them) admitted per Window.
	Tokens int
	// Concurrent is the requests answered at once.
	Concurrent int
	// Window is the rate window; 0 means one second.
	Window time.Duration
}

// Config configures [New].
type Config struct {
	// Limits are enforced per model.
	Limits Limits
	// Latency is how long each admitted request takes to answer.
	Latency time.Duration
	// OutputTokens is the completion tokens of each answer, at most the
	// request's max_tokens; 0 means 8.
	OutputTokens int
}

// Admitted is one request the server answered 200.
type Admitted struct {
	// At is when it arrived.
	At time.Time
	// Model is the request's model.
	Model string
	// PromptTokens and CompletionTokens are the usage it answered.
	PromptTokens, CompletionTokens int
}

// Server is a running limiting server; Close it when done.
type Server struct {
	*httptest.Server
	cfg Config

	mu          sync.Mutex
	admitted    []Admitted
	refused     int
	inFlight    map[string]int
	maxInFlight map[string]int
}

// PromptTokens is how the server counts a prompt: a token per four bytes
// of each message's content, rounded up, plus three per message.
func PromptTokens(contents ...string) int {
	n := 0
	for _, c := range contents {
		n += (len(c)+3)/4 + 3
	}
	return n
}

// New starts a server answering POST /v1/chat/completions.
func New(cfg Config) *Server {
	if cfg.Limits.Window <= 0 {
		cfg.Limits.Window = time.Second
	}
	if cfg.OutputTokens <= 0 {
		cfg.OutputTokens = 8
	}
	s := &Server{cfg: cfg, inFlight: map[string]int{}, maxInFlight: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL of the API root, for openai.Config.BaseURL.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

type request struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Messages  []struct {
		Content string `json:"content"`
	} `json:"messages"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, `{"error":{"message":"bad request body","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	contents := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		contents[i] = m.Content
	}
	prompt := PromptTokens(contents...)
	out := s.cfg.OutputTokens
	if req.MaxTokens > 0 {
		out = min(out, req.MaxTokens)
	}
	lim := s.cfg.Limits
	s.mu.Lock()
	now := time.Now()
	reqs, toks, oldest := s.windowLocked(req.Model, now)
	var why string
	switch {
	case lim.Concurrent > 0 && s.inFlight[req.Model] >= lim.Concurrent:
		why = "concurrent requests"
	case lim.Requests > 0 && reqs >= lim.Requests:
		why = "requests per window"
	case lim.Tokens > 0 && toks+prompt+out > lim.Tokens:
		why = "tokens per window"
	}
	if why != "" {
		s.refused++
		s.mu.Unlock()
		wait := time.Duration(0)
		if !oldest.IsZero() {
			wait = max(oldest.Add(lim.Window).Sub(now), time.Millisecond)
		}
		w.Header().Set("Retry-After-Ms", fmt.Sprint(max(wait.Milliseconds(), 1)))
		if lim.Requests > 0 {
			w.Header().Set("X-Ratelimit-Remaining-Requests", fmt.Sprint(max(lim.Requests-reqs, 0)))
			w.Header().Set("X-Ratelimit-Reset-Requests", wait.String())
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"error":{"message":"rate limit reached: %s","type":"requests","code":"rate_limit_exceeded"}}`, why)
		return
	}
	s.admitted = append(s.admitted, Admitted{At: now, Model: req.Model, PromptTokens: prompt, CompletionTokens: out})
	s.inFlight[req.Model]++
	s.maxInFlight[req.Model] = max(s.maxInFlight[req.Model], s.inFlight[req.Model])
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight[req.Model]--
		s.mu.Unlock()
	}()
	if s.cfg.Latency > 0 {
		select {
		case <-time.After(s.cfg.Latency):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", now.UnixNano()), "object": "chat.completion", "created": now.Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": "ok"}}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
	})
}

// windowLocked returns the requests and tokens admitted for model in the
// window ending now, and the oldest of them; s.mu is held.
func (s *Server) windowLocked(model string, now time.Time) (reqs, toks int, oldest time.Time) {
	cut := now.Add(-s.cfg.Limits.Window)
	for i := len(s.admitted) - 1; i >= 0; i-- {
		a := s.admitted[i]
		if !a.At.After(cut) {
			break
		}
		if a.Model == model {
			reqs++
			toks += a.PromptTokens + a.CompletionTokens
			oldest = a.At
		}
	}
	return reqs, toks, oldest
}

// Admitted returns the requests answered 200, in arrival order.
func (s *Server) Admitted() []Admitted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.admitted)
}

// Refused returns how many requests were answered 429.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// MaxInFlight returns the most requests of model answered at once.
func (s *Server) MaxInFlight(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight[model]
}

// Worst returns, for model, the most requests and the most tokens
// admitted in any window of w (sliding over every admission).
func Worst(adm []Admitted, model string, w time.Duration) (reqs, toks int) {
	var xs []Admitted
	for _, a := range adm {
		if a.Model == model {
			xs = append(xs, a)
		}
	}
	j, sum := 0, 0
	for i, a := range xs {
		sum += a.PromptTokens + a.CompletionTokens
		for a.At.Sub(xs[j].At) >= w {
			sum -= xs[j].PromptTokens + xs[j].CompletionTokens
			j++
		}
		reqs, toks = max(reqs, i-j+1), max(toks, sum)
	}
	return reqs, toks
}

// InFlight returns the requests of model being answered now.
func (s *Server) InFlight(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight[model]
}
