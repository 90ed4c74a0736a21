package ops

import "context"

// yieldKey is the context key of a request's slot yield.
type yieldKey struct{}

// SlotYield gives up the slot the request of a context holds in the
// process that runs it (a worker's request slot), so that other requests
// run while it waits for something that is not work: a model's budget. It
// returns nil when the slot cannot be given up (the process has as many
// requests without a slot as it may); else resume, which takes a slot
// again when one is free. Resume never waits for one: a request that found
// none goes on without, within the process's bound.
type SlotYield func() (resume func())

// WithSlotYield returns ctx carrying y, for [YieldSlot].
func WithSlotYield(ctx context.Context, y SlotYield) context.Context {
	return context.WithValue(ctx, yieldKey{}, y)
}

// YieldSlot gives up the slot of ctx's request (see [SlotYield]) and
// returns the function that takes one again; nil when there is no slot to
// give up, or it may not be given up now.
func YieldSlot(ctx context.Context) (resume func()) {
	y, _ := ctx.Value(yieldKey{}).(SlotYield)
	if y == nil {
		return nil
	}
	return y()
}
