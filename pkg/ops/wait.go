package ops

import (
	"context"
	"time"
)

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
