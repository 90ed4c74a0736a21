// Package anthropic is the model provider of the Anthropic Messages API
// (POST /v1/messages): models "anthropic:MODEL". A leading system message
// becomes "system"; user and assistant turns become messages (consecutive
// turns of one role are joined); the call's tools are offered with their
// JSON Schema as input_schema, and tool_use blocks of the answer become
// native tool calls. [Provider.Stream] reads the streaming events
// (message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error) and emits text and thinking deltas as chunks.
//
// The API key is sent as x-api-key with anthropic-version 2023-06-01;
// [ConfigFromEnv] reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.
package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/budget"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Name is the provider name of model references "anthropic:MODEL".
const Name = "anthropic"

// Environment variables read by [ConfigFromEnv].
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// Defaults of a [Config].
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultVersion   = "2023-06-01"
	DefaultMaxTokens = 4096
	DefaultTimeout   = 10 * time.Minute
	// MaxResponseBytes bounds an answer's body (or a stream's).
	MaxResponseBytes = 16 << 20
	maxErrorBody     = 64 << 10
)

// Sentinel errors; every failure is an *ops.ProviderError wrapping one.
var (
	// ErrConfig means a Config cannot be used.
	ErrConfig = errors.New("anthropic: invalid configuration")
	// ErrInvalidCall means the call cannot be sent (no model, no
	// messages, an option the provider sets itself). Final.
	ErrInvalidCall = errors.New("anthropic: invalid call")
	// ErrAPI is an error answer of the API (HTTP or in the stream); 429,
	// 5xx and 529 (overloaded) are temporary.
	ErrAPI = errors.New("anthropic: API error")
	// ErrConnection means the request or its answer was lost. Temporary.
	ErrConnection = errors.New("anthropic: connection failed")
	// ErrMalformedResponse means a successful answer could not be read. Final.
	ErrMalformedResponse = errors.New("anthropic: malformed response")
)

// Config configures a [Provider].
type Config struct {
	// APIKey is sent as x-api-key; "" sends none (a local gateway).
	APIKey string
	// BaseURL is the API root, without /v1. Default DefaultBaseURL.
	BaseURL string
	// HTTPClient makes the requests; nil means a client without timeout
	// (calls are bounded by Timeout).
	HTTPClient *http.Client
	// MaxTokens is max_tokens when the model reference sets none.
	// Default DefaultMaxTokens.
	MaxTokens int
	// Timeout bounds one call. Default DefaultTimeout.
	Timeout time.Duration
	// Version is the anthropic-version header. Default DefaultVersion.
	Version string
}

// ConfigFromEnv returns a Config with APIKey and BaseURL from the
// environment (lookup is os.LookupEnv).
func ConfigFromEnv(lookup func(string) (string, bool)) Config {
	var c Config
	c.APIKey, _ = lookup(EnvAPIKey)
	c.BaseURL, _ = lookup(EnvBaseURL)
	return c
}

// Provider calls the Messages API. It is safe for concurrent use.
type Provider struct {
	cfg      Config
	endpoint string
}

var _ ops.StreamingProvider = (*Provider)(nil)

// New returns a provider for cfg, or an error wrapping ErrConfig.
func New(cfg Config) (*Provider, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		return nil, fmt.Errorf("%w: base URL %q is not http(s)", ErrConfig, cfg.BaseURL)
	}
	if cfg.MaxTokens < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: MaxTokens and Timeout must not be negative", ErrConfig)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	base := strings.TrimSuffix(strings.TrimSuffix(cfg.BaseURL, "/"), "/v1")
	return &Provider{cfg: cfg, endpoint: base + "/v1/messages"}, nil
}

// String names the provider and its endpoint, never the key.
func (p *Provider) String() string { return "anthropic messages at " + p.endpoint }

// wire types of the Messages API.
type (
	block struct {
		Type      string         `json:"type"`
		Text      string         `json:"text,omitempty"`
		Thinking  string         `json:"thinking,omitempty"`
		ID        string         `json:"id,omitempty"`
		Name      string         `json:"name,omitempty"`
		Input     map[string]any `json:"input,omitempty"`
		ToolUseID string         `json:"tool_use_id,omitempty"`
	}
	usage struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
	}
	response struct {
		ID         string  `json:"id"`
		Type       string  `json:"type"`
		Role       string  `json:"role"`
		Model      string  `json:"model"`
		Content    []block `json:"content"`
		StopReason string  `json:"stop_reason"`
		Usage      usage   `json:"usage"`
	}
	apiError struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
)

// buildRequest returns the request body of call.
func (p *Provider) buildRequest(call ops.Call, stream bool) ([]byte, error) {
	if call.Model.Model == "" {
		return nil, fmt.Errorf("%w: the model reference names no model (want \"anthropic:MODEL\")", ErrInvalidCall)
	}
	body := map[string]any{"model": call.Model.Model, "max_tokens": p.cfg.MaxTokens}
	for _, k := range slices.Sorted(maps.Keys(call.Model.Options)) {
		switch k {
		case "model", "messages", "stream", "system", "tools":
			return nil, fmt.Errorf("%w: model option %q is set by the provider", ErrInvalidCall, k)
		case "timeout":
			continue // the operations layer's option
		}
		body[k] = call.Model.Options[k]
	}
	var msgs []map[string]any
	for i, m := range call.Messages.All() {
		role := "user"
		switch m.Role {
		case history.RoleSystem:
			if i == 0 {
				body["system"] = m.Content
				continue
			}
		case history.RoleAssistant:
			role = "assistant"
		}
		if n := len(msgs); n > 0 && msgs[n-1]["role"] == role {
			msgs[n-1]["content"] = msgs[n-1]["content"].(string) + "\n\n" + m.Content
			continue
		}
		msgs = append(msgs, map[string]any{"role": role, "content": m.Content})
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: the call has no messages", ErrInvalidCall)
	}
	body["messages"] = msgs
	if len(call.Tools) > 0 {
		tools := make([]map[string]any, 0, len(call.Tools))
		for _, t := range call.Tools {
			schema := json.RawMessage(`{"type":"object"}`)
			if len(t.Parameters) > 0 {
				schema = t.Parameters
			}
			tool := map[string]any{"name": t.Name, "input_schema": schema}
			if t.Description != "" {
				tool["description"] = t.Description
			}
			tools = append(tools, tool)
		}
		body["tools"] = tools
	}
	if stream {
		body["stream"] = true
	}
	return json.Marshal(body)
}

// post sends body and returns the answer of a 2xx status.
func (p *Provider) post(ctx context.Context, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, p.fail(err.Error(), false, ErrInvalidCall)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("anthropic-version", p.cfg.Version)
	if stream {
		req.Header.Set("accept", "text/event-stream")
	}
	if p.cfg.APIKey != "" {
		req.Header.Set("x-api-key", p.cfg.APIKey)
	}
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("anthropic: call abandoned: %w", context.Cause(ctx))
		}
		return nil, p.fail(err.Error(), true, ErrConnection)
	}
	budget.ObserveResponse(ctx, resp.StatusCode, resp.Header)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		var ae apiError
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &ae) == nil && ae.Error.Message != "" {
			msg = ae.Error.Type + ": " + ae.Error.Message
		}
		temporary := resp.StatusCode == 429 || resp.StatusCode >= 500
		return nil, p.fail(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, ops.Truncate(msg, 512)), temporary, ErrAPI)
	}
	return resp, nil
}

// fail returns a provider error with the key taken out.
func (p *Provider) fail(msg string, temporary bool, sentinel error) *ops.ProviderError {
	if p.cfg.APIKey != "" {
		msg = strings.ReplaceAll(msg, p.cfg.APIKey, "[redacted]")
	}
	return &ops.ProviderError{Provider: Name, Message: msg, Temporary: temporary, Err: sentinel}
}

// Complete makes one Messages call.
func (p *Provider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	body, err := p.buildRequest(call, false)
	if err != nil {
		return nil, p.fail(err.Error(), false, err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	resp, err := p.post(ctx, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	if err != nil {
		return nil, p.fail("reading the answer: "+err.Error(), true, ErrConnection)
	}
	return p.decode(raw)
}

// decode turns a Messages response into a completion.
func (p *Provider) decode(raw []byte) (*ops.Completion, error) {
	var r response
	if err := json.Unmarshal(raw, &r); err != nil || r.Type != "message" {
		return nil, p.fail(fmt.Sprintf("the answer is not a message: %s", ops.Truncate(string(raw), 200)), false, ErrMalformedResponse)
	}
	comp := &ops.Completion{Raw: json.RawMessage(raw)}
	var text strings.Builder
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := b.Input
			if args == nil {
				args = map[string]any{}
			}
			comp.ToolCalls = append(comp.ToolCalls, ops.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	comp.Text = text.String()
	u := r.Usage
	in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	comp.Usage = &ops.Usage{InputTokens: in, OutputTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens}
	return comp, nil
}

// streamEvent is the data of one streaming event.
type streamEvent struct {
	Type         string          `json:"type"`
	Message      *response       `json:"message"`
	Index        int             `json:"index"`
	ContentBlock *block          `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        *usage          `json:"usage"`
	Error        *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type delta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}

// Stream makes the call with "stream": true and emits text and thinking
// deltas as chunks as they arrive, a tool_use chunk when a tool_use block
// is complete, and a result chunk with the usage at the end. The
// completion is the one Complete returns for the same answer: the blocks
// are put back together into a message. An error event, or a stream that
// ends before message_stop, fails the call; an error of emit stops it.
func (p *Provider) Stream(ctx context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	body, err := p.buildRequest(call, true)
	if err != nil {
		return nil, p.fail(err.Error(), false, err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	resp, err := p.post(ctx, body, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	var (
		msg      response
		blocks   = map[int]*block{}
		partial  = map[int]*strings.Builder{}
		started  = map[int]bool{} // text blocks that emitted a chunk
		stopped  bool
		emitted  int
		emitFail error
	)
	send := func(c ops.Chunk) bool {
		if err := emit(c); err != nil {
			emitFail = err
			return false
		}
		emitted++
		return true
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, MaxResponseBytes))
	sc.Buffer(make([]byte, 0, 64<<10), MaxResponseBytes)
	for !stopped && emitFail == nil && sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue // event: lines (the name repeats data.type), blank lines
		}
		var ev streamEvent
		if err := json.Unmarshal(bytes.TrimSpace(data), &ev); err != nil {
			return nil, p.fail("stream event is not JSON: "+err.Error(), false, ErrMalformedResponse)
		}
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				msg = *ev.Message
				msg.Content = nil
			}
		case "content_block_start":
			if ev.ContentBlock != nil {
				b := *ev.ContentBlock
				blocks[ev.Index] = &b
				partial[ev.Index] = &strings.Builder{}
			}
		case "content_block_delta":
			var d delta
			_ = json.Unmarshal(ev.Delta, &d)
			b := blocks[ev.Index]
			if b == nil {
				b = &block{Type: "text"}
				blocks[ev.Index] = b
				partial[ev.Index] = &strings.Builder{}
			}
			switch d.Type {
			case "text_delta":
				b.Text += d.Text
				send(ops.Chunk{Kind: ops.ChunkText, Content: d.Text, IsDelta: started[ev.Index]})
				started[ev.Index] = true
			case "thinking_delta":
				b.Thinking += d.Thinking
				send(ops.Chunk{Kind: ops.ChunkThinking, Content: d.Thinking, IsDelta: true})
			case "input_json_delta":
				partial[ev.Index].WriteString(d.PartialJSON)
			}
		case "content_block_stop":
			b := blocks[ev.Index]
			if b == nil || b.Type != "tool_use" {
				continue
			}
			in := map[string]any{}
			if s := strings.TrimSpace(partial[ev.Index].String()); s != "" {
				if err := json.Unmarshal([]byte(s), &in); err != nil {
					return nil, p.fail(fmt.Sprintf("tool_use %s input is not a JSON object: %v", b.ID, err), false, ErrMalformedResponse)
				}
			} else if b.Input != nil {
				in = b.Input
			}
			b.Input = in
			send(ops.Chunk{Kind: ops.ChunkToolUse, ToolID: b.ID, ToolName: b.Name, ToolInput: in})
		case "message_delta":
			var d delta
			_ = json.Unmarshal(ev.Delta, &d)
			if d.StopReason != "" {
				msg.StopReason = d.StopReason
			}
			if ev.Usage != nil {
				// Cumulative counts.
				msg.Usage.OutputTokens = ev.Usage.OutputTokens
				if ev.Usage.InputTokens > 0 {
					msg.Usage.InputTokens = ev.Usage.InputTokens
				}
			}
		case "message_stop":
			stopped = true
		case "error":
			text := "error event"
			temporary := false
			if ev.Error != nil {
				text = ev.Error.Type + ": " + ev.Error.Message
				temporary = ev.Error.Type == "overloaded_error" || ev.Error.Type == "api_error" || ev.Error.Type == "rate_limit_error"
			}
			if emitted > 0 {
				temporary = false // the chunks sent cannot be taken back
			}
			return nil, p.fail("in the stream: "+text, temporary, ErrAPI)
		}
	}
	if emitFail != nil {
		return nil, fmt.Errorf("anthropic: stream stopped by its consumer: %w", emitFail)
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("anthropic: call abandoned: %w", context.Cause(ctx))
		}
		return nil, p.fail("reading the stream: "+err.Error(), emitted == 0, ErrConnection)
	}
	if !stopped {
		return nil, p.fail("the stream ended before message_stop", emitted == 0, ErrConnection)
	}
	idx := slices.Sorted(maps.Keys(blocks))
	for _, i := range idx {
		msg.Content = append(msg.Content, *blocks[i])
	}
	msg.Type, msg.Role = "message", "assistant"
	raw, err := json.Marshal(msg)
	if err != nil {
		return nil, p.fail(err.Error(), false, ErrMalformedResponse)
	}
	comp, err := p.decode(raw)
	if err != nil {
		return nil, err
	}
	md := map[string]any{"stop_reason": msg.StopReason, "usage": map[string]any{
		"input_tokens": msg.Usage.InputTokens, "output_tokens": msg.Usage.OutputTokens,
	}}
	if !send(ops.Chunk{Kind: ops.ChunkResult, Metadata: md}) {
		return nil, fmt.Errorf("anthropic: stream stopped by its consumer: %w", emitFail)
	}
	return comp, nil
}
