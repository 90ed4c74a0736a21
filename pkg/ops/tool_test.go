package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

func TestToolFuncs_Invoke(t *testing.T) {
	t.Parallel()
	type point struct {
		X int `json:"x"`
		Y int `json:"y"`
	}
	var seen map[string]any
	var seenMu sync.Mutex
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"echo": func(_ context.Context, args map[string]any) (any, error) {
			seenMu.Lock()
			seen = args
			seenMu.Unlock()
			return args, nil
		},
		"point": func(context.Context, map[string]any) (any, error) { return point{1, 2}, nil },
		"null":  func(context.Context, map[string]any) (any, error) { return nil, nil },
		"fails": func(context.Context, map[string]any) (any, error) { return nil, errors.New("disk full") },
		"coded": func(context.Context, map[string]any) (any, error) {
			return nil, fmt.Errorf("validating: %w", &ops.ToolError{Code: "bad_input", Message: "x is required"})
		},
		"unencodable": func(context.Context, map[string]any) (any, error) { return make(chan int), nil },
		"panics":      func(context.Context, map[string]any) (any, error) { panic("index out of range") },
		"hangs": func(ctx context.Context, _ map[string]any) (any, error) {
			select {
			case <-ctx.Done(): // the deadline reaches the tool
			case <-release:
			}
			return "late", nil
		},
	})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		call     ops.ToolInvocation
		want     ops.ToolOutcome
		wantErr  error
		anyErr   bool // an error is wanted, of no particular kind
		wantSeen map[string]any
		counted  bool
		deadline time.Duration // from the start of the subtest; 0 is none
	}{
		{
			name: "arguments cross JSON", call: ops.ToolInvocation{Function: "echo", Arguments: map[string]any{"n": 3, "s": []string{"a"}}},
			want:     ops.ToolOutcome{Output: map[string]any{"n": 3.0, "s": []any{"a"}}},
			wantSeen: map[string]any{"n": 3.0, "s": []any{"a"}}, counted: true,
		},
		{
			name: "nil arguments are an empty object", call: ops.ToolInvocation{Function: "echo"},
			want: ops.ToolOutcome{Output: map[string]any{}}, wantSeen: map[string]any{}, counted: true,
		},
		{name: "struct output", call: ops.ToolInvocation{Function: "point"}, want: ops.ToolOutcome{Output: map[string]any{"x": 1.0, "y": 2.0}}, counted: true},
		{name: "null output", call: ops.ToolInvocation{Function: "null"}, want: ops.ToolOutcome{}, counted: true},
		{name: "tool failure is a value", call: ops.ToolInvocation{Function: "fails"}, want: ops.ToolOutcome{Error: &ops.ToolError{Code: ops.ToolErrorFailed, Message: "disk full"}}, counted: true},
		{name: "tool error code kept", call: ops.ToolInvocation{Function: "coded"}, want: ops.ToolOutcome{Error: &ops.ToolError{Code: "bad_input", Message: "x is required"}}, counted: true},
		{name: "unencodable output", call: ops.ToolInvocation{Function: "unencodable"}, want: ops.ToolOutcome{Error: &ops.ToolError{Code: ops.ToolErrorFailed, Message: "output is not JSON-encodable: json: unsupported type: chan int"}}, counted: true},
		{name: "panicking tool", call: ops.ToolInvocation{Function: "panics"}, want: ops.ToolOutcome{Error: &ops.ToolError{Code: ops.ToolErrorFailed, Message: "tool panicked: index out of range"}}, counted: true},
		{name: "unknown tool", call: ops.ToolInvocation{Function: "nope"}, wantErr: ops.ErrNoTool},
		{name: "unencodable arguments", call: ops.ToolInvocation{Function: "echo", Arguments: map[string]any{"f": func() {}}}, anyErr: true},
		{name: "deadline passed before the call", call: ops.ToolInvocation{Function: "echo"}, deadline: -time.Second, wantErr: context.DeadlineExceeded},
		{name: "context ended before the call", ctx: canceled, call: ops.ToolInvocation{Function: "echo"}, wantErr: context.Canceled},
		{name: "deadline passes during the call", call: ops.ToolInvocation{Function: "hangs"}, deadline: 100 * time.Millisecond, wantErr: context.DeadlineExceeded, counted: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			seenMu.Lock()
			seen = nil
			seenMu.Unlock()
			tt.call.IdempotencyKey = ops.ToolCallKey("req", i)
			if tt.deadline != 0 {
				tt.call.Deadline = time.Now().Add(tt.deadline)
			}
			got, err := tools.Invoke(ctx, tt.call)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.anyErr:
				if err == nil {
					t.Fatalf("no error; outcome %+v", got)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("outcome = %#v (error %v), want %#v", got, got.Error, tt.want)
				}
			}
			seenMu.Lock()
			defer seenMu.Unlock()
			if tt.wantSeen != nil && !reflect.DeepEqual(seen, tt.wantSeen) {
				t.Fatalf("the tool saw %#v, want %#v", seen, tt.wantSeen)
			}
			want := 0
			if tt.counted {
				want = 1
			}
			if n := tools.Calls(tt.call.IdempotencyKey); n != want {
				t.Fatalf("Calls(%q) = %d, want %d", tt.call.IdempotencyKey, n, want)
			}
		})
	}
}

func TestToolFuncs_counts_calls_per_key(t *testing.T) {
	t.Parallel()
	var tools opstest.ToolFuncs // the zero value has no tools
	if _, err := tools.Invoke(context.Background(), ops.ToolInvocation{Function: "add"}); !errors.Is(err, ops.ErrNoTool) {
		t.Fatalf("zero value: err = %v, want ErrNoTool", err)
	}
	if err := tools.Register("add", func(_ context.Context, a map[string]any) (any, error) {
		x, _ := a["x"].(float64)
		y, _ := a["y"].(float64)
		return x + y, nil
	}); err != nil {
		t.Fatal(err)
	}
	// A redelivered request computes the same keys, so a tool can tell a
	// repeated call from a new one.
	if ops.ToolCallKey("req-1", 2) != "req-1/tool/2" || ops.ToolCallKey("req-1", 2) == ops.ToolCallKey("req-1", 3) ||
		ops.ToolCallKey("req-1", 2) == ops.ToolCallKey("req-2", 2) {
		t.Fatal("ToolCallKey is not a stable, distinct key per request and index")
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			key := ops.ToolCallKey("req-1", i%2)
			out, err := tools.Invoke(context.Background(), ops.ToolInvocation{
				Function: "add", Arguments: map[string]any{"x": i, "y": 1}, IdempotencyKey: key, RequestID: "req-1",
			})
			if err != nil || out.Output != float64(i+1) {
				t.Errorf("call %d: %+v, %v", i, out, err)
			}
		})
	}
	wg.Wait()
	for _, idx := range []int{0, 1} {
		if n := tools.Calls(ops.ToolCallKey("req-1", idx)); n != 5 {
			t.Fatalf("Calls(index %d) = %d, want 5", idx, n)
		}
	}
	if n := tools.Calls("other"); n != 0 {
		t.Fatalf("Calls(other) = %d", n)
	}
}

func TestToolFuncs_Register(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, map[string]any) (any, error) { return nil, nil }
	tests := []struct {
		name string
		tool string
		fn   opstest.ToolFunc
		ok   bool
	}{
		{"valid", "get_weather", noop, true},
		{"nil func", "x", nil, false},
		{"empty name", "", noop, false},
		{"dotted name", "a.b", noop, false},
		{"wildcard", ">", noop, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools := &opstest.ToolFuncs{}
			err := tools.Register(tt.tool, tt.fn)
			if (err == nil) != tt.ok {
				t.Fatalf("Register(%q) = %v, want ok %v", tt.tool, err, tt.ok)
			}
			if got := len(tools.Names()); got != map[bool]int{true: 1}[tt.ok] {
				t.Fatalf("%d tools registered", got)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("NewToolFuncs accepted a bad name")
		}
	}()
	opstest.NewToolFuncs(map[string]opstest.ToolFunc{"bad name": noop})
}

// The JSON forms are the data of lionbus.tool.invoke and lionbus.tool.result
// (docs/protocol.md#tools-planned).
func TestToolInvocation_wire_form(t *testing.T) {
	t.Parallel()
	deadline := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"invocation", ops.ToolInvocation{Function: "add", Arguments: map[string]any{"x": 1}, IdempotencyKey: "r/tool/0", RequestID: "r", BranchID: "b", Deadline: deadline},
			`{"function":"add","arguments":{"x":1},"idempotency_key":"r/tool/0","request_id":"r","branch_id":"b","deadline":"2026-03-01T12:00:00Z"}`},
		{"no arguments, branch or deadline", ops.ToolInvocation{Function: "now", IdempotencyKey: "r/tool/1", RequestID: "r"},
			`{"function":"now","arguments":{},"idempotency_key":"r/tool/1","request_id":"r"}`},
		{"output", ops.ToolOutcome{Output: []any{1, "a"}}, `{"output":[1,"a"]}`},
		{"error", ops.ToolOutcome{Error: &ops.ToolError{Code: "bad_input", Message: "x"}}, `{"error":{"code":"bad_input","message":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
	var back ops.ToolInvocation
	if err := json.Unmarshal([]byte(tests[0].want), &back); err != nil || !back.Deadline.Equal(deadline) || back.IdempotencyKey != "r/tool/0" {
		t.Fatalf("decoded %+v, %v", back, err)
	}
}

// 0022-D4-05 (the gate's part): a denial is a decision with a reason, not an
// error; an error is reserved for a gate that could not decide.
func TestAuthorizers(t *testing.T) {
	t.Parallel()
	gateDown := ops.AuthorizerFunc(func(context.Context, ops.ToolInvocation) (ops.Decision, error) {
		return ops.Decision{}, errors.New("approver unreachable")
	})
	tests := []struct {
		name      string
		auth      ops.Authorizer
		tool      string
		allow     bool
		reason    string
		wantError bool
	}{
		{"allow all", ops.AllowAll, "anything", true, "", false},
		{"listed tool", ops.AllowTools("add", "mul"), "mul", true, "", false},
		{"unlisted tool", ops.AllowTools("add", "mul"), "rm", false, `tool "rm" is not allowed on this branch`, false},
		{"empty list denies", ops.AllowTools(), "add", false, `tool "add" is not allowed on this branch`, false},
		{"gate failure is an error", gateDown, "add", false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tt.auth.Authorize(context.Background(), ops.ToolInvocation{Function: tt.tool})
			if (err != nil) != tt.wantError || d.Allow != tt.allow || d.Reason != tt.reason {
				t.Fatalf("Authorize(%q) = %+v, %v; want allow %v reason %q error %v", tt.tool, d, err, tt.allow, tt.reason, tt.wantError)
			}
		})
	}
}
