package openaitest_test

import (
	"context"
	"errors"
	"github.com/lionbus/lionbus/pkg/wire"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/budget"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai/openaitest"
)

func call(model string) ops.Call {
	return ops.Call{Model: wire.ModelRef{Provider: "openai", Model: model},
		Messages: ops.PromptOf(ops.ChatMessage{Role: wire.RoleUser, Content: "hello there"})}
}

// The server refuses above its limit with a 429 the openai provider
// classifies, and its Retry-After pauses a budget wrapped around the
// provider.
func TestServerLimitsAndSignals(t *testing.T) {
	srv := openaitest.New(openaitest.Config{Limits: openaitest.Limits{Requests: 2, Window: time.Minute}})
	defer srv.Close()
	prov, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		comp, err := prov.Complete(ctx, call("m"))
		if err != nil {
			t.Fatal(err)
		}
		if want := openaitest.PromptTokens("hello there"); comp.Usage == nil || comp.Usage.InputTokens != want || comp.Usage.OutputTokens != 8 {
			t.Fatalf("usage %+v, want %d in and 8 out", comp.Usage, want)
		}
	}
	if _, err := prov.Complete(ctx, call("m")); !errors.Is(err, openai.ErrRateLimited) {
		t.Fatalf("third request in the window: %v, want ErrRateLimited", err)
	}
	if _, err := prov.Complete(ctx, call("other")); err != nil {
		t.Fatalf("another model is limited on its own: %v", err)
	}
	if srv.Refused() != 1 || len(srv.Admitted()) != 3 {
		t.Fatalf("refused %d admitted %d, want 1 and 3", srv.Refused(), len(srv.Admitted()))
	}
	l := budget.NewLedger()
	wrapped := budget.Wrap(prov, budget.Config{Ledger: l, RateLimitRetries: -1})
	if _, err := wrapped.Complete(ctx, call("m")); err == nil {
		t.Fatal("a 429 through the budget succeeded")
	}
	if p := l.Stats("openai:m").PausedUntil; time.Until(p) < 30*time.Second {
		t.Fatalf("paused until %v, want about a minute from now (the server's Retry-After)", p)
	}
	if reqs, toks := openaitest.Worst(srv.Admitted(), "m", time.Minute); reqs != 2 || toks != 2*(openaitest.PromptTokens("hello there")+8) {
		t.Fatalf("worst window %d requests %d tokens", reqs, toks)
	}
}

// Without any budget set, a wrapped provider learns the server's limit
// from its 429s: each pauses the model until the server's window frees,
// and the refused call is sent again through the budget, so every call
// succeeds.
func TestWrapRetriesRateLimitedCallsThroughTheBudget(t *testing.T) {
	srv := openaitest.New(openaitest.Config{Limits: openaitest.Limits{Requests: 2, Window: 300 * time.Millisecond}})
	defer srv.Close()
	prov, err := openai.New(openai.Config{BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	l := budget.NewLedger()
	var attempts int
	wrapped := budget.Wrap(prov, budget.Config{Ledger: l, RateLimitRetries: 5,
		OnCall: func(r budget.CallReport) { attempts += r.Attempts }})
	for i := range 6 {
		if _, err := wrapped.Complete(context.Background(), call("m")); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if len(srv.Admitted()) != 6 || srv.Refused() != attempts-6 || srv.Refused() >= 6 {
		t.Fatalf("admitted %d, refused %d, attempts %d: want 6 admitted and fewer refusals than calls", len(srv.Admitted()), srv.Refused(), attempts)
	}
	if s := l.Stats("openai:m"); s.InFlight != 0 {
		t.Fatalf("after the calls: %+v", s)
	}
}
