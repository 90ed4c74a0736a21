package ops

import "context"

// attemptKey is the context key of the delivery attempt of the request an
// operation runs for.
type attemptKey struct{}

// WithAttempt returns ctx carrying the delivery attempt n of the request
// it runs for; [Engine.Do] sets it from Request.Attempt.
func WithAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, n)
}

// Attempt returns the delivery attempt of the request ctx runs for (see
// Request.Attempt, [WithAttempt]); 0 outside an operation. A tool
// invoker uses it as a provider uses Call.Attempt: a first delivery can
// have left nothing behind to look for.
func Attempt(ctx context.Context) int {
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}
