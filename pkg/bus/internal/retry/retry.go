// Package retry spaces out the retries of an operation that keeps failing:
// exponential backoff, capped, with jitter.
package retry

import (
	"math/rand/v2"
	"time"
)

// Backoff gives the delays between the retries of one operation. Its zero
// value is not usable; set First and Max. It is not safe for concurrent use.
type Backoff struct {
	// First is the delay after the first failure.
	First time.Duration
	// Max caps the delay.
	Max time.Duration

	failures int
}

// Next records a failure and returns how long to wait before retrying:
// First doubled for each failure since the last Reset, at most Max, of
// which a random part (up to half) is taken off, so that processes that
// failed together do not retry together.
func (b *Backoff) Next() time.Duration {
	b.failures++
	d := b.First
	for i := 1; i < b.failures && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if half := int64(d / 2); half > 0 {
		d -= time.Duration(rand.Int64N(half + 1))
	}
	return d
}

// Failures returns how many failures Next recorded since the last Reset.
func (b *Backoff) Failures() int { return b.failures }

// Reset starts over after a success: the next delay is First again.
func (b *Backoff) Reset() { b.failures = 0 }
