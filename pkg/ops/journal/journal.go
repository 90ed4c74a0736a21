// Package journal keeps the completed model calls of a request until the
// request commits, so that a redelivery pays no completed call again.
//
// An operation's model calls are recorded in a branch's history when the
// operation commits. A communicate whose answer needs a reformat round
// makes two calls before it commits; a worker that dies between them
// leaves nothing recorded, and the redelivery would call the model again
// for the first. [Wrap] journals each completed call in a [Store] under a
// key of the request and of everything the call sent ([Key]); a
// redelivered request (Call.Attempt above 1) finds the calls it already
// made there and gets their completions without calling the provider.
//
// A key covers the call's position in the branch's calls, its model and
// options, every message, the instruction, the tools, the response format
// and the session to resume: a journaled completion is only ever returned
// for the very call that produced it. The package is transport-free; the
// worker's store is pkg/bus/journal's, on a JetStream stream.
package journal

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"

	"github.com/lionbus/lionbus/pkg/ops"
)

// Store keeps journal entries (JSON) by key. Get reports false for a key
// it does not hold.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Put(ctx context.Context, key string, entry []byte) error
}

// completion is a journaled completion.
type completion struct {
	Text      string          `json:"text"`
	ToolCalls []ops.ToolCall  `json:"tool_calls,omitempty"`
	Usage     *ops.Usage      `json:"usage,omitempty"`
	Raw       json.RawMessage `json:"raw,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
}

// Config configures [Wrap].
type Config struct {
	// Store keeps the journal; required.
	Store Store
	// OnError, when set, is told of a journal read or write that failed
	// (op is "get" or "put"): the call goes on as if it had no journal (a
	// failed read calls the provider, a failed write loses the entry).
	OnError func(op, key string, err error)
}

// Wrap returns a provider that answers a redelivered call from cfg.Store
// when the call completed before, and journals every completion of next
// before returning it. A streaming next gives a streaming provider whose
// Stream is not journaled (its chunks are the stream's own record).
func Wrap(next ops.Provider, cfg Config) ops.Provider {
	p := &provider{next: next, cfg: cfg}
	if s, ok := next.(ops.StreamingProvider); ok {
		return &streamingProvider{provider: p, stream: s}
	}
	return p
}

type provider struct {
	next ops.Provider
	cfg  Config
}

type streamingProvider struct {
	*provider
	stream ops.StreamingProvider
}

// Stream streams from the wrapped provider, unjournaled.
func (p *streamingProvider) Stream(ctx context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	return p.stream.Stream(ctx, call, emit)
}

// Complete answers from the journal on a redelivery, else calls the
// wrapped provider and journals its completion.
func (p *provider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	key := Key(call)
	if call.Attempt > 1 {
		var e completion
		if get(ctx, p.cfg, key, &e) {
			return &ops.Completion{Text: e.Text, ToolCalls: e.ToolCalls, Usage: e.Usage, Raw: e.Raw, SessionID: e.SessionID}, nil
		}
	}
	c, err := p.next.Complete(ctx, call)
	if err != nil {
		return nil, err
	}
	put(ctx, p.cfg, key, completion{Text: c.Text, ToolCalls: c.ToolCalls, Usage: c.Usage, Raw: c.Raw, SessionID: c.SessionID})
	return c, nil
}

// get reads the entry of key into v, telling cfg.OnError of a failure; it
// reports whether it found one.
func get(ctx context.Context, cfg Config, key string, v any) bool {
	raw, ok, err := cfg.Store.Get(ctx, key)
	if err == nil && ok {
		if err = json.Unmarshal(raw, v); err == nil {
			return true
		}
	}
	if err != nil && cfg.OnError != nil {
		cfg.OnError("get", key, err)
	}
	return false
}

// put journals v under key, telling cfg.OnError of a failure.
func put(ctx context.Context, cfg Config, key string, v any) {
	raw, err := json.Marshal(v)
	if err == nil {
		err = cfg.Store.Put(ctx, key, raw)
	}
	if err != nil && cfg.OnError != nil {
		cfg.OnError("put", key, err)
	}
}

// Key is the journal key of call: its request id, a dot, and 32 hex
// digits of a SHA-256 over everything the call sends and its position.
// The request id and the digits are subject-token characters, so the key
// may end a subject.
func Key(call ops.Call) string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], call.Index)
	h.Write(n[:])
	model, _ := json.Marshal(call.Model)
	field(h, model)
	field(h, []byte(call.BranchID))
	binary.BigEndian.PutUint64(n[:], uint64(call.Messages.Len()))
	h.Write(n[:])
	for _, m := range call.Messages.All() {
		field(h, []byte(m.Role))
		field(h, []byte(m.Content))
	}
	field(h, []byte(call.Instruction))
	tools, _ := json.Marshal(call.Tools)
	field(h, tools)
	field(h, call.ResponseFormat)
	field(h, []byte(call.Resume))
	return call.RequestID + "." + hex.EncodeToString(h.Sum(nil)[:16])
}

// field writes b to h with its length first, so that no two sequences of
// fields hash alike.
func field(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
