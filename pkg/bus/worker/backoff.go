package worker

import "time"

// DefaultBackoff is the retry schedule of temporary failures: the delay
// before the first retry, the second, and so on; the last entry repeats.
var DefaultBackoff = []time.Duration{
	1 * time.Second,
	2 * time.Second,
	5 * time.Second,
	10 * time.Second,
	30 * time.Second,
}

// Backoff is a retry schedule: Backoff[n-1] is the delay before the n-th
// retry, and the last entry is used for every later retry.
type Backoff []time.Duration

// Delay returns the delay before the retry that follows delivery attempt
// (1 for the first delivery). An empty schedule means no delay.
func (b Backoff) Delay(attempt int) time.Duration {
	if len(b) == 0 {
		return 0
	}
	i := attempt - 1
	if i < 0 {
		i = 0
	}
	if i >= len(b) {
		i = len(b) - 1
	}
	return b[i]
}
