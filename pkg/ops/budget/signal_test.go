package budget_test

import (
	"context"
	"github.com/lionbus/lionbus/pkg/wire"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/budget"
)

func TestParseSignalPause(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		status int
		h      map[string]string
		want   time.Duration // pause from now; 0 none
	}{
		{"ok without headers", 200, nil, 0},
		{"429 Retry-After seconds", 429, map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{"429 retry-after-ms wins", 429, map[string]string{"Retry-After": "9", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"429 without a wait", 429, nil, budget.DefaultRateLimitPause},
		{"429 OpenAI reset of exhausted requests", 429, map[string]string{"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "1.5s"}, 1500 * time.Millisecond},
		{"ok with OpenAI tokens exhausted", 200, map[string]string{"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "6m0s"}, budget.MaxPause},
		{"ok with tokens left", 200, map[string]string{"X-Ratelimit-Remaining-Tokens": "10", "X-Ratelimit-Reset-Tokens": "3s"}, 0},
		{"Anthropic requests exhausted", 200, map[string]string{"Anthropic-Ratelimit-Requests-Remaining": "0",
			"Anthropic-Ratelimit-Requests-Reset": now.Add(4 * time.Second).Format(time.RFC3339)}, 4 * time.Second},
		{"429 Retry-After date", 429, map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second},
		{"429 huge Retry-After capped", 429, map[string]string{"Retry-After": "1e300"}, budget.MaxPause},
		{"429 garbage", 429, map[string]string{"Retry-After": "soon", "X-Ratelimit-Remaining-Requests": "x"}, budget.DefaultRateLimitPause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.h {
				h.Set(k, v)
			}
			until := budget.ParseSignal(tt.status, h, now).PauseUntil(now)
			var got time.Duration
			if !until.IsZero() {
				got = until.Sub(now)
			}
			if got != tt.want {
				t.Fatalf("pause %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPricesCost(t *testing.T) {
	p := budget.Prices{
		"openai:gpt-4.1-mini": {Input: 0.4, Output: 1.6},
		"anthropic:*":         {Input: 3, Output: 15},
	}
	tests := []struct {
		model string
		u     ops.Usage
		want  float64
		ok    bool
	}{
		{"openai:gpt-4.1-mini", ops.Usage{InputTokens: 1_000_000, OutputTokens: 500_000}, 0.4 + 0.8, true},
		{"anthropic:claude-x", ops.Usage{InputTokens: 2000, OutputTokens: 100}, (2000*3 + 100*15) / 1e6, true},
		{"openai:other", ops.Usage{InputTokens: 5}, 0, false},
	}
	for _, tt := range tests {
		m, _ := wire.ParseModelRef(tt.model)
		got, ok := p.Cost(m, tt.u)
		if ok != tt.ok || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s %+v: %v %v, want %v %v", tt.model, tt.u, got, ok, tt.want, tt.ok)
		}
	}
}

// usageProvider answers every call with fixed usage, and reports a 429
// signal through the context once.
type usageProvider struct {
	in, out int
	signal  http.Header
}

func (p *usageProvider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	if p.signal != nil {
		budget.ObserveResponse(ctx, 429, p.signal)
	}
	return &ops.Completion{Text: "ok", Usage: &ops.Usage{InputTokens: p.in, OutputTokens: p.out, TotalTokens: p.in + p.out}}, nil
}

func TestWrapReconcilesPricesAndLearns(t *testing.T) {
	l := budget.NewLedger()
	model := wire.ModelRef{Provider: "openai", Model: "m", Options: map[string]any{"max_tokens": float64(200)}}
	_ = l.SetLimits(model.String(), budget.Limits{Tokens: 10_000, WindowMS: 60_000})
	var signalled []string
	var reserved, used int
	prov := budget.Wrap(&usageProvider{in: 30, out: 12, signal: http.Header{"Retry-After-Ms": {"100"}}}, budget.Config{
		Ledger:   l,
		Prices:   budget.Prices{"openai:m": {Input: 1, Output: 2}},
		OnSignal: func(key string, s budget.Signal) { signalled = append(signalled, key) },
		OnCall:   func(r budget.CallReport) { reserved, used = r.Reserved, r.Used },
	})
	prompt := ops.PromptOf(ops.ChatMessage{Role: wire.RoleUser, Content: "twelve bytes"})
	comp, err := prov.Complete(context.Background(), ops.Call{Model: model, Messages: prompt})
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 + budget.PerMessageTokens + 200; reserved != want || used != 42 {
		t.Fatalf("reserved %d used %d, want %d and 42", reserved, used, want)
	}
	if s := l.Stats("openai:m"); s.Tokens != 42 || s.InFlight != 0 || s.PausedUntil.IsZero() {
		t.Fatalf("ledger after the call: %+v, want 42 tokens, none in flight, a pause", s)
	}
	if want := (30*1 + 12*2) / 1e6; math.Abs(comp.Usage.CostUSD-want) > 1e-15 {
		t.Fatalf("cost %v, want %v", comp.Usage.CostUSD, want)
	}
	if len(signalled) != 1 || signalled[0] != "openai:m" {
		t.Fatalf("signals %v", signalled)
	}
}

// The waits of a request's calls add up in its tally: the second call
// waits for the first's in-flight slot.
func TestWrap_adds_each_calls_wait_to_the_request_tally(t *testing.T) {
	l := budget.NewLedger()
	model := wire.ModelRef{Provider: "openai", Model: "m"}
	_ = l.SetLimits(model.String(), budget.Limits{InFlight: 1})
	prov := budget.Wrap(&usageProvider{in: 1, out: 1}, budget.Config{Ledger: l})
	hold, err := l.Acquire(context.Background(), model.String(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, tally := budget.WithWaitTally(context.Background())
	go func() {
		time.Sleep(50 * time.Millisecond)
		hold.Done(1)
	}()
	prompt := ops.PromptOf(ops.ChatMessage{Role: wire.RoleUser, Content: "hi"})
	if _, err := prov.Complete(ctx, ops.Call{Model: model, Messages: prompt}); err != nil {
		t.Fatal(err)
	}
	first := tally.Waited()
	if first < 50*time.Millisecond {
		t.Fatalf("tally %s after a call that waited for a slot held 50ms", first)
	}
	if _, err := prov.Complete(ctx, ops.Call{Model: model, Messages: prompt}); err != nil {
		t.Fatal(err)
	}
	if got := tally.Waited(); got != first {
		t.Fatalf("tally %s after a call that did not wait, want still %s", got, first)
	}
	_, other := budget.WithWaitTally(context.Background())
	if other.Waited() != 0 {
		t.Fatal("a fresh tally is not zero")
	}
}
