package budget

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxPause bounds a pause learned from a provider's answer, so that a
// wrong header cannot stop a model for long.
const MaxPause = 5 * time.Minute

// DefaultRateLimitPause is the pause after a 429 that says for how long
// neither in Retry-After nor in a reset header.
const DefaultRateLimitPause = time.Second

// Signal is what a provider's answer said about its own limits. A count
// of -1 means the answer did not say.
type Signal struct {
	// Status is the HTTP status of the answer.
	Status int `json:"status"`
	// RetryAfter is the answer's Retry-After (or retry-after-ms); 0 when
	// none.
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
	// RemainingRequests and RemainingTokens are what the provider says is
	// left of its window (x-ratelimit-remaining-*, or Anthropic's
	// anthropic-ratelimit-*-remaining).
	RemainingRequests int `json:"remaining_requests"`
	RemainingTokens   int `json:"remaining_tokens"`
	// ResetRequests and ResetTokens are when those counts refill, from now.
	ResetRequests time.Duration `json:"reset_requests_ns,omitempty"`
	ResetTokens   time.Duration `json:"reset_tokens_ns,omitempty"`
}

// ParseSignal reads the rate-limit headers of an answer of status: the
// OpenAI ones (x-ratelimit-remaining-requests, -tokens, x-ratelimit-reset-
// requests, -tokens as durations such as "6m0s" or "20ms"), the Anthropic
// ones (anthropic-ratelimit-requests-remaining, -tokens-remaining,
// -requests-reset, -tokens-reset as RFC 3339 times) and Retry-After (or
// retry-after-ms).
func ParseSignal(status int, h http.Header, now time.Time) Signal {
	s := Signal{Status: status, RemainingRequests: -1, RemainingTokens: -1}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			s.RetryAfter = capPause(ms * float64(time.Millisecond))
		}
	} else if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if sec, err := strconv.ParseFloat(v, 64); err == nil && sec >= 0 {
			s.RetryAfter = capPause(sec * float64(time.Second))
		} else if t, err := http.ParseTime(v); err == nil {
			s.RetryAfter = capPause(float64(max(t.Sub(now), 0)))
		}
	}
	count := func(names ...string) int {
		for _, n := range names {
			if v := strings.TrimSpace(h.Get(n)); v != "" {
				if c, err := strconv.Atoi(v); err == nil && c >= 0 {
					return c
				}
			}
		}
		return -1
	}
	reset := func(names ...string) time.Duration {
		for _, n := range names {
			v := strings.TrimSpace(h.Get(n))
			if v == "" {
				continue
			}
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				return capPause(float64(d))
			}
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				return capPause(float64(max(t.Sub(now), 0)))
			}
			if sec, err := strconv.ParseFloat(v, 64); err == nil && sec >= 0 {
				return capPause(sec * float64(time.Second))
			}
		}
		return 0
	}
	s.RemainingRequests = count("X-Ratelimit-Remaining-Requests", "Anthropic-Ratelimit-Requests-Remaining")
	s.RemainingTokens = count("X-Ratelimit-Remaining-Tokens", "Anthropic-Ratelimit-Tokens-Remaining")
	s.ResetRequests = reset("X-Ratelimit-Reset-Requests", "Anthropic-Ratelimit-Requests-Reset")
	s.ResetTokens = reset("X-Ratelimit-Reset-Tokens", "Anthropic-Ratelimit-Tokens-Reset")
	return s
}

func capPause(ns float64) time.Duration {
	if math.IsNaN(ns) || ns >= float64(MaxPause) {
		return MaxPause
	}
	return time.Duration(ns)
}

// PauseUntil returns until when the model should send nothing, or the zero
// time when the signal asks for no pause: after a 429, its Retry-After
// (else the reset of an exhausted count, else DefaultRateLimitPause); on
// any other answer, the reset of a count the provider says is exhausted.
func (s Signal) PauseUntil(now time.Time) time.Time {
	var d time.Duration
	if s.RemainingRequests == 0 {
		d = max(d, s.ResetRequests)
	}
	if s.RemainingTokens == 0 {
		d = max(d, s.ResetTokens)
	}
	if s.Status == http.StatusTooManyRequests {
		switch {
		case s.RetryAfter > 0:
			d = s.RetryAfter
		case d == 0:
			d = DefaultRateLimitPause
		}
	}
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(min(d, MaxPause))
}

type sinkKey struct{}

// Metered reports whether ctx carries a budget's signal sink: the budget
// then retries a rate-limited call itself, through the budget, and a
// provider should return a 429 at once instead of retrying it.
func Metered(ctx context.Context) bool {
	f, _ := ctx.Value(sinkKey{}).(func(Signal))
	return f != nil
}

// WithSignalSink returns a context that carries f: a provider calls
// [ObserveResponse] with each answer it receives under that context, and f
// is told of the rate-limit signal the answer carries.
func WithSignalSink(ctx context.Context, f func(Signal)) context.Context {
	return context.WithValue(ctx, sinkKey{}, f)
}

// ObserveResponse tells ctx's signal sink (see [WithSignalSink]) about an
// answer of status with headers h; without a sink it does nothing. The
// providers call it with every HTTP answer.
func ObserveResponse(ctx context.Context, status int, h http.Header) {
	f, _ := ctx.Value(sinkKey{}).(func(Signal))
	if f == nil {
		return
	}
	f(ParseSignal(status, h, time.Now()))
}
