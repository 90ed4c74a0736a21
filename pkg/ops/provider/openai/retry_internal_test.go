package openai

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		wantOK bool
	}{
		{name: "none", header: nil},
		{name: "seconds", header: map[string]string{"Retry-After": "7"}, want: 7 * time.Second, wantOK: true},
		{name: "zero seconds", header: map[string]string{"Retry-After": "0"}, want: 0, wantOK: true},
		{name: "fractional seconds", header: map[string]string{"Retry-After": " 1.5 "}, want: 1500 * time.Millisecond, wantOK: true},
		{name: "HTTP date ahead", header: map[string]string{"Retry-After": "Sat, 01 Mar 2025 12:00:30 GMT"}, want: 30 * time.Second, wantOK: true},
		{name: "HTTP date passed", header: map[string]string{"Retry-After": "Sat, 01 Mar 2025 11:00:00 GMT"}, want: 0, wantOK: true},
		{name: "retry-after-ms wins", header: map[string]string{"Retry-After": "7", "retry-after-ms": "250"}, want: 250 * time.Millisecond, wantOK: true},
		{name: "bad retry-after-ms falls back", header: map[string]string{"Retry-After": "7", "retry-after-ms": "soon"}, want: 7 * time.Second, wantOK: true},
		{name: "negative", header: map[string]string{"Retry-After": "-3"}},
		{name: "garbage", header: map[string]string{"Retry-After": "tomorrow"}},
		{name: "NaN", header: map[string]string{"Retry-After": "NaN"}},
		{name: "huge is capped", header: map[string]string{"Retry-After": "1e300"}, want: maxRetryAfter, wantOK: true},
		{name: "infinite is refused", header: map[string]string{"Retry-After": "+Inf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := parseRetryAfter(h, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseRetryAfter(%v) = %s, %v; want %s, %v", tt.header, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	low := func(int64) int64 { return 0 }
	high := func(n int64) int64 { return n - 1 }
	base, maxWait := 500*time.Millisecond, 5*time.Second
	tests := []struct {
		retry     int
		wantLow   time.Duration
		wantHigh  time.Duration
		base, max time.Duration
	}{
		{retry: 1, wantLow: 250 * time.Millisecond, wantHigh: 500 * time.Millisecond},
		{retry: 2, wantLow: 500 * time.Millisecond, wantHigh: time.Second},
		{retry: 3, wantLow: time.Second, wantHigh: 2 * time.Second},
		{retry: 4, wantLow: 2 * time.Second, wantHigh: 4 * time.Second},
		{retry: 5, wantLow: 2500 * time.Millisecond, wantHigh: 5 * time.Second}, // capped
		{retry: 200, wantLow: 2500 * time.Millisecond, wantHigh: 5 * time.Second},
		{retry: 3, base: time.Nanosecond, max: time.Second, wantLow: 4 * time.Nanosecond / 2, wantHigh: 4 * time.Nanosecond},
	}
	for _, tt := range tests {
		b, m := base, maxWait
		if tt.base != 0 {
			b, m = tt.base, tt.max
		}
		if got := backoff(b, m, tt.retry, low); got != tt.wantLow {
			t.Errorf("retry %d: lowest wait %s, want %s", tt.retry, got, tt.wantLow)
		}
		if got := backoff(b, m, tt.retry, high); got != tt.wantHigh {
			t.Errorf("retry %d: highest wait %s, want %s", tt.retry, got, tt.wantHigh)
		}
	}
}
