package ops

import "context"

// Observer is told about the model and tool calls an [Engine] makes, for
// metrics and traces. Each method is called as a call starts and returns
// the context the call runs with (a tracer puts its span there) and a
// function the engine calls once with the call's outcome. Implementations
// must be safe for concurrent use and quick: they run on the request's
// path.
type Observer interface {
	// ModelCall observes one model call.
	ModelCall(ctx context.Context, call Call) (context.Context, func(*Completion, error))
	// ToolCall observes one tool invocation that act makes (a call denied
	// before it is made is not observed).
	ToolCall(ctx context.Context, call ToolInvocation) (context.Context, func(ToolOutcome, error))
}

// Observers joins observers into one that tells each of them, in order;
// the context one returns is passed to the next.
func Observers(obs ...Observer) Observer {
	var list observers
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	return list
}

type observers []Observer

func (l observers) ModelCall(ctx context.Context, call Call) (context.Context, func(*Completion, error)) {
	dones := make([]func(*Completion, error), 0, len(l))
	for _, o := range l {
		var done func(*Completion, error)
		ctx, done = o.ModelCall(ctx, call)
		dones = append(dones, done)
	}
	return ctx, func(c *Completion, err error) {
		for i := len(dones) - 1; i >= 0; i-- {
			dones[i](c, err)
		}
	}
}

func (l observers) ToolCall(ctx context.Context, call ToolInvocation) (context.Context, func(ToolOutcome, error)) {
	dones := make([]func(ToolOutcome, error), 0, len(l))
	for _, o := range l {
		var done func(ToolOutcome, error)
		ctx, done = o.ToolCall(ctx, call)
		dones = append(dones, done)
	}
	return ctx, func(out ToolOutcome, err error) {
		for i := len(dones) - 1; i >= 0; i-- {
			dones[i](out, err)
		}
	}
}
