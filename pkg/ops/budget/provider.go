package budget

import (
	"context"
	"net/http"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// DefaultMaxOutputTokens is the output reserved for a call whose model
// reference sets no max_tokens (or max_completion_tokens) option, when
// [Config.MaxOutputTokens] is 0.
const DefaultMaxOutputTokens = 1024

// DefaultRateLimitRetries is Config.RateLimitRetries when 0.
const DefaultRateLimitRetries = 3

// Config configures [Wrap].
type Config struct {
	// Ledger meters the calls; required.
	Ledger *Ledger
	// Key names the budget of a call's model; nil means the model
	// reference's "provider:model".
	Key func(history.ModelRef) string
	// MaxOutputTokens is the output reserved for a call whose model sets
	// no max_tokens option; 0 means DefaultMaxOutputTokens.
	MaxOutputTokens int
	// Prices, when set, puts each call's cost in its usage (CostUSD).
	Prices Prices
	// OnSignal is told of every rate-limit signal a provider answered with
	// (a 429's Retry-After, an exhausted x-ratelimit-remaining-*), after
	// the local ledger has been paused; the fleet layer broadcasts it. Nil
	// means the pause stays local.
	OnSignal func(key string, s Signal)
	// RateLimitRetries is how many times a call the provider refused
	// with a 429 is sent again, each time once the budget (paused by the
	// 429's Retry-After) admits it; 0 means DefaultRateLimitRetries, a
	// negative value none.
	RateLimitRetries int
	// OnCall, when set, is told of every call once it ended, for metrics
	// and log lines.
	OnCall func(CallReport)
}

// Wrap returns a provider that waits for cfg.Ledger's budget before each
// call of next and reconciles it from the call's reported usage. A
// streaming next gives a streaming provider.
func Wrap(next ops.Provider, cfg Config) ops.Provider {
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = DefaultMaxOutputTokens
	}
	if cfg.RateLimitRetries == 0 {
		cfg.RateLimitRetries = DefaultRateLimitRetries
	}
	if cfg.Key == nil {
		cfg.Key = func(m history.ModelRef) string { return m.String() }
	}
	p := &provider{next: next, cfg: cfg}
	if s, ok := next.(ops.StreamingProvider); ok {
		return &streamingProvider{provider: p, stream: s}
	}
	return p
}

// CallReport is what [Config.OnCall] is told of a call.
type CallReport struct {
	// Call is the call made.
	Call ops.Call
	// Key is its budget's key.
	Key string
	// Waited is how long it waited for budget.
	Waited time.Duration
	// Reserved is the tokens reserved, Used the tokens the provider
	// reported (-1 when it reported none).
	Reserved, Used int
	// CostUSD is the call's cost by the price table; 0 when unknown.
	CostUSD float64
	// Err is the call's error, nil on success.
	Err error
	// Attempts is how many times the call was sent (more than one after
	// a provider's 429).
	Attempts int
}

type provider struct {
	next ops.Provider
	cfg  Config
}

type streamingProvider struct {
	*provider
	stream ops.StreamingProvider
}

// Complete waits for budget, then calls the wrapped provider.
func (p *provider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	return p.metered(ctx, call, func(ctx context.Context) (*ops.Completion, error) {
		return p.next.Complete(ctx, call)
	})
}

// Stream waits for budget, then streams from the wrapped provider.
func (p *streamingProvider) Stream(ctx context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	return p.metered(ctx, call, func(ctx context.Context) (*ops.Completion, error) {
		return p.stream.Stream(ctx, call, emit)
	})
}

func (p *provider) metered(ctx context.Context, call ops.Call, do func(context.Context) (*ops.Completion, error)) (*ops.Completion, error) {
	key := p.cfg.Key(call.Model)
	est := EstimateCall(call, p.cfg.MaxOutputTokens)
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		r, err := p.cfg.Ledger.Acquire(ctx, key, est)
		if err != nil {
			return nil, err
		}
		waited += r.Waited()
		limited := false
		comp, err := do(WithSignalSink(ctx, func(s Signal) {
			limited = limited || s.Status == http.StatusTooManyRequests
			if until := s.PauseUntil(time.Now()); !until.IsZero() {
				p.cfg.Ledger.Pause(key, until)
				if p.cfg.OnSignal != nil {
					p.cfg.OnSignal(key, s)
				}
			}
		}))
		if err != nil && limited {
			// The provider refused the call: it counts in no window, and
			// it is sent again once the (now paused) budget admits it.
			r.Refund()
			if attempt <= p.cfg.RateLimitRetries && ctx.Err() == nil {
				continue
			}
		}
		used := -1
		if comp != nil && comp.Usage != nil {
			used = comp.Usage.InputTokens + comp.Usage.OutputTokens
			if used == 0 {
				used = comp.Usage.TotalTokens
			}
			if p.cfg.Prices != nil {
				if c, ok := p.cfg.Prices.Cost(call.Model, *comp.Usage); ok {
					comp.Usage.CostUSD = c
				}
			}
		}
		r.Done(used)
		addWait(ctx, waited)
		if p.cfg.OnCall != nil {
			rep := CallReport{Call: call, Key: key, Waited: waited, Reserved: r.Tokens, Used: used, Err: err, Attempts: attempt}
			if comp != nil && comp.Usage != nil {
				rep.CostUSD = comp.Usage.CostUSD
			}
			p.cfg.OnCall(rep)
		}
		return comp, err
	}
}
