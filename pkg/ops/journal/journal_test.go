package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/journal"
)

// memStore is a Store in memory that counts its reads and can fail.
type memStore struct {
	mu         sync.Mutex
	m          map[string][]byte
	gets, puts int
	fail       error
}

func newMem() *memStore { return &memStore{m: map[string][]byte{}} }

func (s *memStore) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.fail != nil {
		return nil, false, s.fail
	}
	c, ok := s.m[key]
	return c, ok, nil
}

func (s *memStore) Put(_ context.Context, key string, entry []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts++
	if s.fail != nil {
		return s.fail
	}
	s.m[key] = entry
	return nil
}

// counter answers "answer N" for its Nth call.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) Complete(context.Context, ops.Call) (*ops.Completion, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return &ops.Completion{Text: "answer " + string(rune('0'+c.n)), Usage: &ops.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}}, nil
}

func baseCall() ops.Call {
	return ops.Call{
		Model:       history.ModelRef{Provider: "openai", Model: "m"},
		Messages:    ops.PromptOf(ops.ChatMessage{Role: history.RoleSystem, Content: "be brief"}, ops.ChatMessage{Role: history.RoleUser, Content: "q"}),
		Instruction: "q", BranchID: "b", RequestID: "r1/react/0/middle", Index: 4, Attempt: 1,
	}
}

// A key changes with everything the call sends and its position, and
// only with that: not with the delivery attempt.
func TestKey(t *testing.T) {
	base := journal.Key(baseCall())
	tests := []struct {
		name   string
		change func(*ops.Call)
		same   bool
	}{
		{"the attempt", func(c *ops.Call) { c.Attempt = 3 }, true},
		{"the index", func(c *ops.Call) { c.Index = 5 }, false},
		{"the request", func(c *ops.Call) { c.RequestID = "r2/react/0/middle" }, false},
		{"the branch", func(c *ops.Call) { c.BranchID = "b2" }, false},
		{"the model", func(c *ops.Call) { c.Model.Model = "m2" }, false},
		{"a model option", func(c *ops.Call) { c.Model.Options = map[string]any{"temperature": 0.5} }, false},
		{"a message", func(c *ops.Call) {
			c.Messages = ops.PromptOf(ops.ChatMessage{Role: history.RoleSystem, Content: "be brief"}, ops.ChatMessage{Role: history.RoleUser, Content: "q2"})
		}, false},
		{"a role", func(c *ops.Call) {
			c.Messages = ops.PromptOf(ops.ChatMessage{Role: history.RoleUser, Content: "be brief"}, ops.ChatMessage{Role: history.RoleUser, Content: "q"})
		}, false},
		{"messages split otherwise", func(c *ops.Call) {
			c.Messages = ops.PromptOf(ops.ChatMessage{Role: history.RoleSystem, Content: "be briefq"})
		}, false},
		{"the instruction", func(c *ops.Call) { c.Instruction = "q2" }, false},
		{"the tools", func(c *ops.Call) { c.Tools = []ops.ToolSpec{{Name: "add"}} }, false},
		{"the response format", func(c *ops.Call) { c.ResponseFormat = json.RawMessage(`{"type":"object"}`) }, false},
		{"the session", func(c *ops.Call) { c.Resume = "sess-1" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := baseCall()
			tt.change(&c)
			if got := journal.Key(c); (got == base) != tt.same {
				t.Fatalf("key %s against %s: same %v, want %v", got, base, got == base, tt.same)
			}
		})
	}
	if want := "r1/react/0/middle."; base[:len(want)] != want || len(base) != len(want)+32 {
		t.Fatalf("key %q: want the request id, a dot and 32 hex digits", base)
	}
}

// A first delivery calls the provider and journals its completion without
// reading the journal; a redelivery of the same call gets the journaled
// completion and the provider is not called; a different call is.
func TestWrap_a_redelivery_gets_the_journaled_completion(t *testing.T) {
	store := newMem()
	next := &counter{}
	p := journal.Wrap(next, journal.Config{Store: store})
	ctx := context.Background()
	first, err := p.Complete(ctx, baseCall())
	if err != nil || first.Text != "answer 1" || store.gets != 0 || store.puts != 1 {
		t.Fatalf("first delivery: %+v, %v; %d gets, %d puts", first, err, store.gets, store.puts)
	}
	again := baseCall()
	again.Attempt = 2
	got, err := p.Complete(ctx, again)
	if err != nil || got.Text != "answer 1" || got.Usage == nil || got.Usage.TotalTokens != 5 || next.n != 1 {
		t.Fatalf("redelivery: %+v, %v; provider called %d times", got, err, next.n)
	}
	other := again
	other.Index++
	if got, err := p.Complete(ctx, other); err != nil || got.Text != "answer 2" || next.n != 2 {
		t.Fatalf("another call of the redelivery: %+v, %v", got, err)
	}
}

// A journal that fails is told to OnError and the call goes on: a failed
// read calls the provider, a failed write returns the completion.
func TestWrap_a_failing_journal_does_not_fail_the_call(t *testing.T) {
	broken := errors.New("stream unavailable")
	store := newMem()
	store.fail = broken
	var seen []string
	p := journal.Wrap(&counter{}, journal.Config{Store: store, OnError: func(op, _ string, err error) {
		if !errors.Is(err, broken) {
			t.Errorf("OnError %s: %v", op, err)
		}
		seen = append(seen, op)
	}})
	c := baseCall()
	c.Attempt = 2
	got, err := p.Complete(context.Background(), c)
	if err != nil || got.Text != "answer 1" || len(seen) != 2 || seen[0] != "get" || seen[1] != "put" {
		t.Fatalf("%+v, %v; errors told %v", got, err, seen)
	}
}

// streamer is a streaming provider that says which method was called.
type streamer struct{ counter }

func (s *streamer) Stream(_ context.Context, _ ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	_ = emit(ops.Chunk{Kind: ops.ChunkText, Content: "streamed"})
	return &ops.Completion{Text: "streamed"}, nil
}

// A streaming provider stays one; its streams are not journaled.
func TestWrap_keeps_streaming_unjournaled(t *testing.T) {
	store := newMem()
	p := journal.Wrap(&streamer{}, journal.Config{Store: store})
	sp, ok := p.(ops.StreamingProvider)
	if !ok {
		t.Fatal("a streaming provider is no longer one")
	}
	c := baseCall()
	c.Attempt = 2
	got, err := sp.Stream(context.Background(), c, func(ops.Chunk) error { return nil })
	if err != nil || got.Text != "streamed" || store.gets+store.puts != 0 {
		t.Fatalf("%+v, %v; journal used %d times", got, err, store.gets+store.puts)
	}
}

// tool counts its runs and answers x+y, or a tool error for x < 0.
type tool struct {
	mu   sync.Mutex
	runs int
	fail error
}

func (t *tool) Invoke(_ context.Context, call ops.ToolInvocation) (ops.ToolOutcome, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runs++
	if t.fail != nil {
		return ops.ToolOutcome{}, t.fail
	}
	x, _ := call.Arguments["x"].(float64)
	y, _ := call.Arguments["y"].(float64)
	if x < 0 {
		return ops.ToolOutcome{Error: &ops.ToolError{Code: "negative", Message: "x < 0"}}, nil
	}
	return ops.ToolOutcome{Output: x + y}, nil
}

func (t *tool) DescribeTools(_ context.Context, names []string) []ops.ToolSpec {
	return []ops.ToolSpec{{Name: names[0], Description: "adds"}}
}

// A tool call whose outcome (an output, or the error the tool reported)
// is journaled is answered from the journal on a redelivery: the tool runs
// once; another call (other arguments, another key) runs it again; an
// invoker failure is not journaled; the wrapped invoker's descriptions
// stay. A first delivery reads no journal.
func TestWrapInvoker(t *testing.T) {
	store := newMem()
	next := &tool{}
	inv := journal.WrapInvoker(next, journal.Config{Store: store})
	if _, err := inv.Invoke(context.Background(), ops.ToolInvocation{Function: "add", Arguments: map[string]any{"x": 5.0}, IdempotencyKey: "r0/act/tool/0", RequestID: "r0"}); err != nil || store.gets != 0 || store.puts != 1 {
		t.Fatalf("a first delivery: %v, %d gets, %d puts; want no read and one write", err, store.gets, store.puts)
	}
	next.runs = 0
	ctx := ops.WithAttempt(context.Background(), 2)
	call := ops.ToolInvocation{Function: "add", Arguments: map[string]any{"x": 1.0, "y": 2.0}, IdempotencyKey: "r1/act/tool/0", RequestID: "r1"}
	for i := range 2 {
		out, err := inv.Invoke(ctx, call)
		if err != nil || out.Output != 3.0 || next.runs != 1 {
			t.Fatalf("call %d: %+v, %v; the tool ran %d times", i, out, err, next.runs)
		}
	}
	neg := call
	neg.Arguments = map[string]any{"x": -1.0, "y": 2.0}
	for i := range 2 {
		out, err := inv.Invoke(ctx, neg)
		if err != nil || out.Error == nil || out.Error.Code != "negative" || next.runs != 2 {
			t.Fatalf("failing call %d: %+v, %v; the tool ran %d times", i, out, err, next.runs)
		}
	}
	other := call
	other.IdempotencyKey = "r1/act/tool/1"
	if _, err := inv.Invoke(ctx, other); err != nil || next.runs != 3 {
		t.Fatalf("another key: %v; the tool ran %d times", err, next.runs)
	}
	next.fail = ops.ErrNoService
	gone := call
	gone.IdempotencyKey = "r1/act/tool/2"
	for range 2 {
		if _, err := inv.Invoke(ctx, gone); !errors.Is(err, ops.ErrNoService) {
			t.Fatalf("invoker failure: %v", err)
		}
	}
	if next.runs != 5 {
		t.Fatalf("an invoker failure was journaled: the tool ran %d times, want 5", next.runs)
	}
	d, ok := inv.(ops.ToolDescriber)
	if !ok || d.DescribeTools(ctx, []string{"add"})[0].Description != "adds" {
		t.Fatal("the wrapped invoker's descriptions are lost")
	}
	if journal.ToolKey(call) == journal.ToolKey(neg) || journal.ToolKey(call) == journal.ToolKey(other) {
		t.Fatal("tool keys collide")
	}
}
