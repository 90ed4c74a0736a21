package clirun

import (
	"context"
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/internal/transcript"
	"github.com/lionbus/lionbus/pkg/ops/provider"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Outcome is what the stream's end makes of the run: operr, the
// request's error recorded with what arrived (nil for a clean end, a
// client's cancel included), or fatal, an error that records nothing:
// chunks that could not be delivered (a temporary CodeUnavailable), or,
// when ctx ended otherwise than by its deadline (the worker stops), the
// stream's error itself, for the caller to classify.
func (s *Stream) Outcome(ctx context.Context, end End, canceled bool) (operr *wire.Error, fatal error) {
	err, model := end.Err, s.Call.Model
	var se *SinkError
	switch {
	case errors.As(err, &se):
		return nil, &wire.Error{Code: wire.CodeUnavailable, Temporary: true, Message: fmt.Sprintf("run: chunks could not be delivered: %v", se.Err), Err: se.Err}
	case err == nil, errors.Is(err, transcript.ErrBenignEOS):
	case errors.Is(err, transcript.ErrStreamFailed):
		operr = &wire.Error{Code: wire.CodeProvider, Message: transcript.ClassifyError(model.Provider, s.Fold.Failure), Err: err}
	case end.TimedOut:
		d, _ := Timeout(model)
		operr = &wire.Error{Code: wire.CodeTimeout, Message: fmt.Sprintf("run: %v after %s", ErrTimeout, d), Err: err}
	case canceled:
		// A clean end with what arrived.
	case ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			operr = &wire.Error{Code: wire.CodeTimeout, Message: fmt.Sprintf("run: the request's deadline passed: %v", err), Err: err}
			break
		}
		// The worker stops: nothing recorded, the request runs again.
		return nil, err
	default:
		// The provider failed without an error chunk (a CLI exiting non-zero):
		// the partial text is kept too.
		var pe *provider.ProviderError
		msg := err.Error()
		if errors.As(err, &pe) {
			msg = pe.Error()
		}
		operr = &wire.Error{Code: wire.CodeProvider, Message: transcript.ClassifyError(model.Provider, msg), Err: err}
	}
	return operr, nil
}
