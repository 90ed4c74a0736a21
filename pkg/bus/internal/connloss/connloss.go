// Package connloss cuts short the requests a NATS connection had
// outstanding when it lost its server. A JetStream API request, publish or
// read sent before the connection dropped has no reply to wait for: the
// server that was to answer it is gone, or answers a subscription the
// connection no longer has. Waiting for its timeout (seconds) would hold
// whatever waits on it long after the connection is back; with [Bound]
// such a call fails as soon as the connection is lost. A call made while
// the connection is away is sent when it is back (the client buffers it),
// and waits for its reply as usual.
package connloss

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrLost is the cause of the context of a call cut short because the
// connection lost its server while the call was outstanding.
var ErrLost = errors.New("the connection to NATS was lost while the request was outstanding")

// watch follows the calls outstanding on one connection.
type watch struct {
	mu    sync.Mutex
	next  uint64
	calls map[uint64]context.CancelCauseFunc
}

var watches sync.Map // *nats.Conn -> *watch

// watchOf returns the watch of nc, starting it on first use: it hooks
// into nc's disconnect handler (calling the one set before it) and is
// forgotten when nc is closed. It starts no goroutine. A disconnect
// handler set on nc afterwards replaces the hook: calls are then only
// bounded by their timeouts.
func watchOf(nc *nats.Conn) *watch {
	if w, ok := watches.Load(nc); ok {
		return w.(*watch)
	}
	w := &watch{calls: map[uint64]context.CancelCauseFunc{}}
	if prev, loaded := watches.LoadOrStore(nc, w); loaded {
		return prev.(*watch)
	}
	prevErr, prevPlain := nc.DisconnectErrHandler(), nc.Opts.DisconnectedCB
	nc.SetDisconnectErrHandler(func(c *nats.Conn, err error) {
		w.lost()
		switch {
		case prevErr != nil:
			prevErr(c, err)
		case prevPlain != nil:
			prevPlain(c)
		}
	})
	prevClosed := nc.ClosedHandler()
	nc.SetClosedHandler(func(c *nats.Conn) {
		w.lost()
		watches.Delete(nc)
		if prevClosed != nil {
			prevClosed(c)
		}
	})
	if nc.IsClosed() {
		watches.Delete(nc)
	}
	return w
}

// lost cuts short every call outstanding now.
func (w *watch) lost() {
	w.mu.Lock()
	calls := w.calls
	w.calls = map[uint64]context.CancelCauseFunc{}
	w.mu.Unlock()
	for _, cancel := range calls {
		cancel(ErrLost)
	}
}

// Bound returns ctx bounded by timeout (when positive) and cut short, with
// cause ErrLost, should nc lose its server before the returned cancel is
// called; call cancel once the call is done.
func Bound(ctx context.Context, nc *nats.Conn, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	var stopTimer context.CancelFunc = func() {}
	if timeout > 0 {
		ctx, stopTimer = context.WithTimeout(ctx, timeout)
	}
	if nc == nil {
		return ctx, func() { stopTimer(); cancelCause(nil) }
	}
	w := watchOf(nc)
	w.mu.Lock()
	id := w.next
	w.next++
	w.calls[id] = cancelCause
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		delete(w.calls, id)
		w.mu.Unlock()
		stopTimer()
		cancelCause(nil)
	}
}

// Err returns err, the failure of a call made with a context from Bound,
// as ErrLost when the call was cut short because the connection was lost
// (so that it reads as a lost connection, not as a cancelled call), and as
// it is otherwise.
func Err(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), ErrLost) {
		return ErrLost
	}
	return err
}
