// Package provider holds the model-provider seam of the operations
// layer: the [Provider] interface and its [Call] and [Completion], the
// classified [ProviderError], the streaming and CLI kinds of provider
// ([StreamingProvider], [CLIProvider], [ResultTotals]) and the [Providers]
// registry. The implementations live in its sub-packages (anthropic,
// openai, cli, scripted); package ops re-exports these names.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Provider calls a model. Implementations live in the provider
// sub-packages; they must be safe for concurrent use.
//
// Complete returns a *ProviderError (or an error wrapping one) for a failure
// the provider can classify; any other error is treated as a final provider
// failure, except context errors, which mean the request timed out or was
// cancelled.
type Provider interface {
	Complete(ctx context.Context, call Call) (*Completion, error)
}

// Call is one model call.
type Call struct {
	// Model is the model reference, with its options.
	Model history.ModelRef
	// Messages is the outgoing conversation: an optional system message
	// first, then user and assistant turns, ending with the current
	// instruction. It is read-only (see [prompt.Prompt]).
	Messages prompt.Prompt
	// Instruction is the current instruction's "instruction" field as text
	// (a string verbatim, any other value as compact JSON), or its
	// plain_content when it has no instruction.
	Instruction string
	// BranchID and RequestID identify the branch and the request.
	BranchID  string
	RequestID string
	// Index is the position of this call in the branch's model calls:
	// Branch.ModelCalls (the calls recorded in committed history, as the
	// operation loaded the branch) plus the calls this operation already
	// made. It is derived from persisted state only, so every worker
	// computes the same Index for the same call of a request against the
	// same branch state, also on redelivery. It is not unique: operations
	// running concurrently on one branch see the same ModelCalls, and a
	// redelivery that follows another operation's commit sees a larger one.
	Index uint64
	// Attempt is the request's delivery attempt, from 1.
	Attempt int

	// ResponseFormat, when set, is a JSON Schema the answer must satisfy,
	// for a provider that can constrain its answer natively (the OpenAI
	// provider sends it as response_format json_schema). Nil asks for
	// nothing; a provider without native structured output ignores it.
	ResponseFormat json.RawMessage
	// Tools, when set, are the function tools the model may call natively
	// (answered in [Completion.ToolCalls]). Nil offers none; a provider
	// without native tool calling ignores them.
	Tools []wire.ToolSpec
	// Resume is the provider session to continue (a CLI model's session
	// id, kept by the branch); "" starts a new one.
	Resume string
}

// ToolCall is a tool call a model asked for natively.
type ToolCall struct {
	ID        string         `json:"id,omitempty"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// Completion is a model's answer.
type Completion struct {
	// Text is the assistant text.
	Text string
	// ToolCalls are native tool calls, if any.
	ToolCalls []ToolCall
	// Usage is the call's token usage; nil when unknown.
	Usage *wire.Usage
	// Raw is the provider's raw response, kept as the assistant response's
	// metadata.model_response.
	Raw json.RawMessage
	// SessionID is the provider session id, for CLI resumption.
	SessionID string
}

// ProviderError is a classified model-provider failure.
type ProviderError struct {
	// Provider is the provider name.
	Provider string
	// Message says what failed.
	Message string
	// Temporary is true when retrying the request later may succeed
	// (rate limits, overload, network failures).
	Temporary bool
	// Err is the underlying error, if any.
	Err error
}

// Error returns the provider name and message.
func (e *ProviderError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("provider %s: %s", e.Provider, msg)
}

// Unwrap returns the underlying error.
func (e *ProviderError) Unwrap() error { return e.Err }

// ErrUnknownProvider is returned by [Providers.Lookup] for an unregistered name.
var ErrUnknownProvider = errors.New("ops: unknown model provider")

// Providers is a registry of model providers by name (the provider part of a
// [history.ModelRef]). It is safe for concurrent use.
type Providers struct {
	mu sync.RWMutex
	m  map[string]Provider
}

// NewProviders returns a registry holding the given providers.
func NewProviders(named map[string]Provider) *Providers {
	p := &Providers{m: make(map[string]Provider, len(named))}
	for k, v := range named {
		p.m[k] = v
	}
	return p
}

// Register adds p under name, replacing any provider of that name.
func (p *Providers) Register(name string, prov Provider) error {
	if name == "" || prov == nil {
		return fmt.Errorf("ops: provider registration needs a name and a provider")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = make(map[string]Provider)
	}
	p.m[name] = prov
	return nil
}

// Lookup returns the provider registered as name, or an error wrapping
// ErrUnknownProvider.
func (p *Providers) Lookup(name string) (Provider, error) {
	if p != nil {
		p.mu.RLock()
		prov, ok := p.m[name]
		p.mu.RUnlock()
		if ok {
			return prov, nil
		}
	}
	return nil, fmt.Errorf("%w %q (registered: %v)", ErrUnknownProvider, name, p.Names())
}

// Names returns the registered provider names, sorted.
func (p *Providers) Names() []string {
	if p == nil {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Sorted(maps.Keys(p.m))
}

// StreamingProvider is a [Provider] that can also deliver its answer as a
// stream of chunks, for run and for streamed API calls. Register it in
// [Providers] like any provider; verbs that stream find it by type
// assertion.
//
// Stream makes the same model call as Complete and passes each chunk to
// emit as it arrives, with Seq left 0. It returns the same final
// [Completion] that Complete would: its Text is the concatenation of the
// text chunks. Provider failures are returned as by Complete; an error
// chunk the model reports in band is emitted, and what it means is the
// caller's decision. When emit returns an error, Stream stops reading and
// returns an error wrapping it. emit is called from one goroutine at a time.
type StreamingProvider interface {
	Provider
	Stream(ctx context.Context, call Call, emit func(wire.Chunk) error) (*Completion, error)
}

// CLIProvider is a [StreamingProvider] whose models run as a coding-agent
// CLI (a subprocess reading its own tools and keeping its own session).
// run accepts only the models for which IsCLI reports true.
type CLIProvider interface {
	StreamingProvider
	// IsCLI reports whether model runs as an agent CLI.
	IsCLI(model history.ModelRef) bool
}

// ResultTotals is implemented by a [CLIProvider] whose result chunks
// carry numbers that add up over the turns of one response instead of
// replacing the previous turn's (Claude Code's total_cost_usd and
// num_turns). A run sums those keys of its result chunks' metadata and
// overwrites the others; the numbers of metadata.usage add up for every
// provider.
type ResultTotals interface {
	// TotalKeys returns the metadata keys of the result chunks whose
	// numbers add up.
	TotalKeys() []string
}

// Message is the assistant response that records comp, an answer of
// model, at t: its text, the raw response as metadata.model_response, the
// model, the usage and any native tool calls.
func (comp *Completion) Message(model history.ModelRef, t time.Time) history.Message {
	var raw any
	if len(comp.Raw) > 0 {
		if err := json.Unmarshal(comp.Raw, &raw); err != nil {
			raw = string(comp.Raw)
		}
	}
	m := history.NewAssistantResponse(comp.Text, raw, t)
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	m.Metadata[history.MetaModel] = model.String()
	if comp.Usage != nil {
		m.Metadata[history.MetaUsage] = map[string]any{
			"input_tokens": comp.Usage.InputTokens, "output_tokens": comp.Usage.OutputTokens,
			"total_tokens": comp.Usage.TotalTokens,
		}
		if comp.Usage.CostUSD > 0 {
			m.Metadata[history.MetaUsage].(map[string]any)["cost_usd"] = comp.Usage.CostUSD
		}
	}
	if len(comp.ToolCalls) > 0 {
		calls := make([]any, len(comp.ToolCalls))
		for i, tc := range comp.ToolCalls {
			calls[i] = map[string]any{"id": tc.ID, "name": tc.Name, "arguments": jsonval.CopyMap(tc.Arguments)}
		}
		m.Metadata["tool_calls"] = calls
	}
	return m
}

// AddUsage sums u into *total, making it on first use; a nil u adds
// nothing.
func AddUsage(total **wire.Usage, u *wire.Usage) {
	if u == nil {
		return
	}
	if *total == nil {
		*total = &wire.Usage{}
	}
	(*total).InputTokens += u.InputTokens
	(*total).OutputTokens += u.OutputTokens
	(*total).TotalTokens += u.TotalTokens
	(*total).CostUSD += u.CostUSD
}
