package worker

import (
	"context"
	"sync"

	"github.com/rs/zerolog"
)

// annotationsKey is the context key of a request's log annotations.
type annotationsKey struct{}

// annotations are the fields a handler or middleware added to the
// request's log line; safe for concurrent use (a handler's goroutines may
// annotate at once).
type annotations struct {
	mu sync.Mutex
	fs []func(*zerolog.Event)
}

// MaxAnnotations bounds the annotations of one request's log line; more
// are dropped.
const MaxAnnotations = 32

// Annotate adds fields to the log line the worker writes when the request
// of ctx (a Handler's context) is answered (see Config.RequestLogLevel):
// f is called with that line's event. It does nothing outside a request,
// or beyond MaxAnnotations for one request.
func Annotate(ctx context.Context, f func(*zerolog.Event)) {
	a, _ := ctx.Value(annotationsKey{}).(*annotations)
	if a == nil || f == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.fs) < MaxAnnotations {
		a.fs = append(a.fs, f)
	}
}

// withAnnotations returns ctx carrying a, for Annotate.
func withAnnotations(ctx context.Context, a *annotations) context.Context {
	return context.WithValue(ctx, annotationsKey{}, a)
}

// apply adds the annotations to e.
func (a *annotations) apply(e *zerolog.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range a.fs {
		f(e)
	}
}
