package openai

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter caps a parsed Retry-After, far above any MaxRetryWait, so
// that huge values cannot overflow a time.Duration.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter returns the wait an answer asks for before the next
// attempt: retry-after-ms (milliseconds, which the OpenAI API sends), else
// Retry-After as seconds or as an HTTP date (a date in the past is 0). ok
// is false when the answer asks for nothing usable.
func parseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return capRetryAfter(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsInf(s, 0) || math.IsNaN(s) {
			return 0, false
		}
		return capRetryAfter(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return capRetryAfter(float64(max(t.Sub(now), 0))), true
	}
	return 0, false
}

func capRetryAfter(ns float64) time.Duration {
	if math.IsNaN(ns) || ns >= float64(maxRetryAfter) {
		return maxRetryAfter
	}
	return time.Duration(ns)
}

// backoff returns the wait before retry number retry (from 1): base
// doubled retry-1 times, capped at maxWait, then drawn at random between
// half of it and all of it (randN(n) returns a number in [0, n)).
func backoff(base, maxWait time.Duration, retry int, randN func(int64) int64) time.Duration {
	d := base
	for i := 1; i < retry && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	if d <= 1 {
		return max(d, 0)
	}
	half := d / 2
	return half + time.Duration(randN(int64(d-half)+1))
}
