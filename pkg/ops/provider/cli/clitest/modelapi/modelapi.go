// Package modelapi holds loopback model-API servers for the tests that
// drive the real coding-agent CLIs: each speaks the wire format one CLI
// talks to (the Anthropic Messages API for Claude Code), streams the
// answer a test's Script picks for each request, and records what every
// request carried, so a test can check what the CLI sent.
package modelapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Reply is the scripted answer to one model request: an API error, or a
// streamed answer of text (sent in small deltas) and an optional tool
// call after it.
type Reply struct {
	// Text is the assistant text, streamed in pieces of a few bytes.
	Text string
	// Tool, when set, is a tool call the answer ends with.
	Tool *ToolCall
	// Error, when set, is answered instead, with its HTTP status.
	Error *APIError
}

// ToolCall is a tool call of a scripted answer.
type ToolCall struct {
	ID    string
	Name  string
	Input map[string]any
}

// APIError is an error answer: the HTTP status and the provider's
// message.
type APIError struct {
	Status  int
	Message string
}

// Exchange is what one model request carried, decoded.
type Exchange struct {
	// Path is the request's URL path.
	Path string
	// Model is the model the request named.
	Model string
	// Prompt is the user text of the request's last turn (the CLI's own
	// reminders left out).
	Prompt string
	// UserTexts are the user texts of every turn, oldest first.
	UserTexts []string
	// ToolResults maps the tool call ids of the results the request
	// carries to their output text.
	ToolResults map[string]string
	// Tools is how many tools the request offered.
	Tools int
	// Body is the raw request body.
	Body []byte
}

// Script picks the reply to a request.
type Script func(Exchange) Reply

// Server is a loopback model-API server.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:PORT).
	URL    string
	srv    *httptest.Server
	script Script

	mu        sync.Mutex
	exchanges []Exchange
}

func start(t testing.TB, script Script, h func(s *Server) http.Handler) *Server {
	t.Helper()
	s := &Server{script: script}
	s.srv = httptest.NewServer(h(s))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

func (s *Server) record(x Exchange) Reply {
	s.mu.Lock()
	s.exchanges = append(s.exchanges, x)
	s.mu.Unlock()
	return s.script(x)
}

// Exchanges returns the requests received so far, in order.
func (s *Server) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exchange(nil), s.exchanges...)
}

// pieces splits text into pieces of at most n bytes (on rune bounds).
func pieces(text string, n int) []string {
	var out []string
	for len(text) > 0 {
		i := min(n, len(text))
		for i < len(text) && (text[i]&0xC0) == 0x80 {
			i++
		}
		out = append(out, text[:i])
		text = text[i:]
	}
	return out
}

// cliNote reports whether a user text is one the CLI adds of its own (a
// <system-reminder>, an <environment_context>...), not the prompt.
func cliNote(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<")
}
