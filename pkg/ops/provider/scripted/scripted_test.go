package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

func model(t *testing.T, ref string) history.ModelRef {
	t.Helper()
	var m history.ModelRef
	if err := json.Unmarshal([]byte(ref), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestProvider_Complete(t *testing.T) {
	const script = `{"provider":"scripted","replies":[
		"plain",
		{"text":"with usage","usage":{"input_tokens":2,"output_tokens":3,"total_tokens":5}},
		{"text":"calls","tool_calls":[{"id":"c1","name":"add","arguments":{"a":1}}]},
		{"error":"boom"},
		{"text":"after","error":{"message":"busy","temporary":true,"attempts":2}},
		{"error":{"message":"always","temporary":true}}]}`
	tests := []struct {
		name      string
		ref       string
		index     uint64
		attempt   int
		wantText  string
		wantErr   string
		temporary bool
		check     func(t *testing.T, c *ops.Completion)
	}{
		{name: "echo", ref: `"scripted:echo"`, wantText: "the instruction"},
		{name: "unknown model", ref: `"scripted:nope"`, wantErr: "unknown"},
		{name: "string reply", ref: script, index: 0, wantText: "plain"},
		{name: "usage", ref: script, index: 1, wantText: "with usage", check: func(t *testing.T, c *ops.Completion) {
			if c.Usage == nil || c.Usage.TotalTokens != 5 {
				t.Fatalf("usage = %+v", c.Usage)
			}
		}},
		{name: "tool calls", ref: script, index: 2, wantText: "calls", check: func(t *testing.T, c *ops.Completion) {
			if len(c.ToolCalls) != 1 || c.ToolCalls[0].Name != "add" || c.ToolCalls[0].Arguments["a"] != 1.0 {
				t.Fatalf("tool calls = %+v", c.ToolCalls)
			}
		}},
		{name: "final error", ref: script, index: 3, wantErr: "boom"},
		{name: "temporary error on attempt 2", ref: script, index: 4, attempt: 2, wantErr: "busy", temporary: true},
		{name: "temporary error gone on attempt 3", ref: script, index: 4, attempt: 3, wantText: "after"},
		{name: "temporary error without attempts persists", ref: script, index: 5, attempt: 9, wantErr: "always", temporary: true},
		{name: "exhausted", ref: script, index: 6, wantErr: "script exhausted"},
		{name: "replies not a list", ref: `{"provider":"scripted","replies":"x"}`, wantErr: "list"},
		{name: "reply of a wrong type", ref: `{"provider":"scripted","replies":[5]}`, wantErr: "string or an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempt := tt.attempt
			if attempt == 0 {
				attempt = 1
			}
			c, err := scripted.New().Complete(context.Background(), ops.Call{
				Model: model(t, tt.ref), Instruction: "the instruction", BranchID: "b", Index: tt.index, Attempt: attempt,
			})
			if tt.wantErr != "" {
				var pe *ops.ProviderError
				if !errors.As(err, &pe) || !strings.Contains(pe.Error(), tt.wantErr) || pe.Temporary != tt.temporary {
					t.Fatalf("err = %#v, want a provider error (temporary %v) mentioning %q", err, tt.temporary, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Text != tt.wantText || len(c.Raw) == 0 {
				t.Fatalf("completion = %+v, want text %q and a raw response", c, tt.wantText)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	p := ops.NewProviders(nil)
	if err := scripted.Register(p); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Lookup(scripted.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Lookup("other"); !errors.Is(err, ops.ErrUnknownProvider) {
		t.Fatalf("err = %v, want ErrUnknownProvider", err)
	}
}
