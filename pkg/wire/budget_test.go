package wire_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

func TestBudgetKey_round_trip(t *testing.T) {
	for _, ref := range []string{"openai:gpt-4.1-mini", "ollama:llama3:8b", "openrouter:meta/llama 3"} {
		got, err := wire.BudgetRef(wire.BudgetKey(ref))
		if err != nil || got != ref {
			t.Errorf("%q: %q %v", ref, got, err)
		}
	}
	for _, bad := range []string{"", "x.abc", "m.", "m.!!"} {
		if _, err := wire.BudgetRef(bad); !errors.Is(err, wire.ErrBadBudgetKey) {
			t.Errorf("BudgetRef(%q): %v, want ErrBadBudgetKey", bad, err)
		}
	}
}

func TestBudgetLimits_window_and_validate(t *testing.T) {
	tests := []struct {
		l      wire.BudgetLimits
		window time.Duration
		bad    bool
	}{
		{wire.BudgetLimits{}, time.Minute, false},
		{wire.BudgetLimits{Requests: 3, WindowMS: 1500}, 1500 * time.Millisecond, false},
		{wire.BudgetLimits{Tokens: -1}, time.Minute, true},
		{wire.BudgetLimits{WindowMS: -5}, time.Minute, true},
	}
	for _, tt := range tests {
		if got := tt.l.Window(); got != tt.window {
			t.Errorf("%+v: window %s, want %s", tt.l, got, tt.window)
		}
		err := tt.l.Validate()
		if bad := errors.Is(err, wire.ErrInvalidBudgetLimits); bad != tt.bad {
			t.Errorf("%+v: Validate %v, want invalid=%v", tt.l, err, tt.bad)
		}
	}
}
