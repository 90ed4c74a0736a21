package ops

import (
	"context"
	"errors"
	"net"
	"os"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// observeCall makes the model call through f, telling the engine's
// observer (when there is one) that it starts and how it ended; f gets
// the context the observer returned.
func (e *Engine) observeCall(ctx context.Context, call Call, f func(context.Context) (*Completion, error)) (*Completion, error) {
	if e.observer == nil {
		return f(ctx)
	}
	ctx, observed := e.observer.ModelCall(ctx, call)
	comp, err := f(ctx)
	if observed != nil {
		observed(comp, err)
	}
	return comp, err
}

// complete makes one model call of an operation; calls counts the calls the
// operation already made (for Call.Index); tools, when given, are offered
// to the model natively (Call.Tools).
func (e *Engine) complete(ctx context.Context, req Request, b *history.Branch, model history.ModelRef, msgs Prompt, instruction string, calls uint64, tools ...ToolSpec) (*Completion, error) {
	prov, err := e.providers.Lookup(model.Provider)
	if err != nil {
		return nil, Errorf(CodeInvalidRequest, "model %s: %v", model.String(), err)
	}
	attempt := req.Attempt
	if attempt < 1 {
		attempt = 1
	}
	call := Call{
		Model: model, Messages: msgs, Instruction: instruction,
		BranchID: b.ID, RequestID: req.ID, Index: b.ModelCalls + calls, Attempt: attempt,
		Tools: tools,
	}
	comp, err := e.observeCall(ctx, call, func(ctx context.Context) (*Completion, error) {
		if sp, ok := prov.(StreamingProvider); ok {
			if emit := chunkEmitter(ctx); emit != nil {
				return sp.Stream(ctx, call, emit)
			}
		}
		return prov.Complete(ctx, call)
	})
	if err != nil {
		var pe *ProviderError
		if errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		// A plain error is final unless it is a network or I/O timeout,
		// which a later attempt may well not hit.
		return nil, &ProviderError{Provider: model.Provider, Message: err.Error(), Temporary: isTimeout(err), Err: err}
	}
	if comp == nil {
		return nil, &ProviderError{Provider: model.Provider, Message: "returned no completion"}
	}
	return comp, nil
}

// isTimeout reports whether err is a timeout that does not match
// context.DeadlineExceeded: a net.Error that timed out, or an I/O deadline
// (os.ErrDeadlineExceeded).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
