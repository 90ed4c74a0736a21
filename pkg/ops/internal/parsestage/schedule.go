package parsestage

import (
	"math"
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

// The retry schedule of the parse stage's reformat rounds. The defaults are
// ADR-0022 D1's parse parameters (make_parse_param: retry_initial_delay 1 s,
// retry_backoff 1.85, three retries, one at a time); a request may set the
// delay within [0, MaxDelay] and the backoff within
// [1, MaxBackoff] (retry_initial_delay, retry_backoff), and no
// single wait is longer than MaxWait.
const (
	DefaultDelay   = time.Second
	DefaultBackoff = 1.85
	MaxDelay       = 10 * time.Second
	MaxBackoff     = 4.0
	MaxWait        = 30 * time.Second
)

// Schedule spaces the reformat rounds of the parse stage. The local
// attempt is the first try and each reformat round a retry: round k (from
// 1) follows a wait of delay × backoff^(k−1), at most MaxWait, so
// the defaults wait 1 s, 1.85 s and 3.42 s before the three rounds.
type Schedule struct {
	Delay   time.Duration
	Backoff float64
}

// DefaultSchedule is the ADR's schedule.
func DefaultSchedule() Schedule {
	return Schedule{Delay: DefaultDelay, Backoff: DefaultBackoff}
}

// NewSchedule applies a request's retry_initial_delay (seconds) and
// retry_backoff, either of which may be absent (nil), to the default
// schedule, refusing values out of bounds.
func NewSchedule(delaySeconds, backoff *float64) (Schedule, error) {
	s := DefaultSchedule()
	if delaySeconds != nil {
		d := *delaySeconds
		if math.IsNaN(d) || d < 0 || d > MaxDelay.Seconds() {
			return s, wire.Errorf(wire.CodeInvalidRequest, "data.retry_initial_delay must be between 0 and %g seconds, got %g", MaxDelay.Seconds(), d)
		}
		s.Delay = time.Duration(d * float64(time.Second))
	}
	if backoff != nil {
		b := *backoff
		if math.IsNaN(b) || b < 1 || b > MaxBackoff {
			return s, wire.Errorf(wire.CodeInvalidRequest, "data.retry_backoff must be between 1 and %g, got %g", MaxBackoff, b)
		}
		s.Backoff = b
	}
	return s, nil
}

// Wait returns the wait before reformat round k (from 1).
func (s Schedule) Wait(k int) time.Duration {
	if s.Delay <= 0 || k < 1 {
		return 0
	}
	d := float64(s.Delay) * math.Pow(s.Backoff, float64(k-1))
	if d > float64(MaxWait) {
		return MaxWait
	}
	return time.Duration(d)
}
