package ops

import (
	"context"
	"math"
	"time"
)

// The retry schedule of the parse stage's reformat rounds. The defaults are
// ADR-0022 D1's parse parameters (make_parse_param: retry_initial_delay 1 s,
// retry_backoff 1.85, three retries, one at a time); a request may set the
// delay within [0, MaxParseRetryDelay] and the backoff within
// [1, MaxParseRetryBackoff] (retry_initial_delay, retry_backoff), and no
// single wait is longer than MaxParseRetryWait.
const (
	DefaultParseRetryDelay   = time.Second
	DefaultParseRetryBackoff = 1.85
	MaxParseRetryDelay       = 10 * time.Second
	MaxParseRetryBackoff     = 4.0
	MaxParseRetryWait        = 30 * time.Second
)

// retrySchedule spaces the reformat rounds of the parse stage. The local
// attempt is the first try and each reformat round a retry: round k (from
// 1) follows a wait of delay × backoff^(k−1), at most MaxParseRetryWait, so
// the defaults wait 1 s, 1.85 s and 3.42 s before the three rounds.
type retrySchedule struct {
	delay   time.Duration
	backoff float64
}

// defaultRetrySchedule is the ADR's schedule.
func defaultRetrySchedule() retrySchedule {
	return retrySchedule{delay: DefaultParseRetryDelay, backoff: DefaultParseRetryBackoff}
}

// newRetrySchedule applies a request's retry_initial_delay (seconds) and
// retry_backoff, either of which may be absent (nil), to the default
// schedule, refusing values out of bounds.
func newRetrySchedule(delaySeconds, backoff *float64) (retrySchedule, error) {
	s := defaultRetrySchedule()
	if delaySeconds != nil {
		d := *delaySeconds
		if math.IsNaN(d) || d < 0 || d > MaxParseRetryDelay.Seconds() {
			return s, Errorf(CodeInvalidRequest, "data.retry_initial_delay must be between 0 and %g seconds, got %g", MaxParseRetryDelay.Seconds(), d)
		}
		s.delay = time.Duration(d * float64(time.Second))
	}
	if backoff != nil {
		b := *backoff
		if math.IsNaN(b) || b < 1 || b > MaxParseRetryBackoff {
			return s, Errorf(CodeInvalidRequest, "data.retry_backoff must be between 1 and %g, got %g", MaxParseRetryBackoff, b)
		}
		s.backoff = b
	}
	return s, nil
}

// wait returns the wait before reformat round k (from 1).
func (s retrySchedule) wait(k int) time.Duration {
	if s.delay <= 0 || k < 1 {
		return 0
	}
	d := float64(s.delay) * math.Pow(s.backoff, float64(k-1))
	if d > float64(MaxParseRetryWait) {
		return MaxParseRetryWait
	}
	return time.Duration(d)
}

// wait waits d, or until ctx is done, through Config.Sleep when it is set.
func (e *Engine) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if e.sleep != nil {
		return e.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
