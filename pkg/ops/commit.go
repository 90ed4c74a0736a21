package ops

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/outcome"
	"github.com/lionbus/lionbus/pkg/wire"
)

// commit appends the exchange's messages with its outcome (res, or the
// failure operr) as one EventMessages, then emits message.added signals.
// A concurrent duplicate (ErrAlreadyCommitted) is answered from history.
// A branch deleted during the operation fails it with CodeBranchNotFound;
// one deleted and created again under the same id receives the exchange
// (a limitation: stores append by branch id, not by branch incarnation).
func (e *Engine) commit(ctx context.Context, req Request, x *exchange, res *Result, operr *Error) (*Result, error) {
	ev := history.Event{Messages: []history.Message{x.ins, x.res}, Clear: x.data.ClearMessages, ModelCalls: x.calls}
	return e.commitEvent(ctx, req, x.branch.ID, ev, res, operr)
}

// commitEvent is commit for any operation: it appends ev (its Messages,
// Clear and ModelCalls; the rest is filled in) as the EventMessages of req
// on branchID, with the outcome, then emits message.added per message.
func (e *Engine) commitEvent(ctx context.Context, req Request, branchID string, ev history.Event, res *Result, operr *Error) (*Result, error) {
	stored, err := outcome.Encode(res, operr)
	if err != nil {
		return nil, err
	}
	msgs := ev.Messages
	ev.Type, ev.RequestID, ev.Time, ev.BranchID, ev.Result = history.EventMessages, req.ID, e.clock(), branchID, stored
	seq, dup, err := e.appendOnce(ctx, branchID, ev)
	if err != nil {
		return nil, err
	}
	if dup {
		return e.replayCommitted(ctx, req, seq, replayMessages)
	}
	for i := range msgs {
		e.emit(ctx, Signal{Type: SignalMessageAdded, Verb: req.Verb, BranchID: branchID, RequestID: req.ID, Message: &msgs[i]})
	}
	if operr != nil {
		return nil, operr
	}
	return res, nil
}

// appendOnce appends ev, an EventMessages of the request (or stage) id
// ev.RequestID, to branchID. When that id has committed already (a
// redelivery, or a concurrent copy that was first), it appends nothing and
// returns the sequence of the committed event with dup true. Store errors
// come back as the errors to answer with.
func (e *Engine) appendOnce(ctx context.Context, branchID string, ev history.Event) (seq uint64, dup bool, err error) {
	if p := wire.ParkedBy(ctx); p != nil {
		// A parked operation commits nothing, whatever context its
		// commit uses: it runs again when it is resumed.
		return 0, false, p
	}
	id := ev.RequestID
	nb, err := e.store.Append(ctx, branchID, ev)
	switch {
	case errors.Is(err, history.ErrAlreadyCommitted):
		ok := false
		if nb != nil {
			seq, ok = nb.Commits.Seq(id)
		}
		if !ok {
			if nb, err = e.load(ctx, branchID); err != nil {
				return 0, false, err
			}
			if seq, ok = nb.Commits.Seq(id); !ok {
				return 0, false, Errorf(CodeInternal, "request %q is reported committed on branch %q but is not in its commits", id, branchID)
			}
		}
		return seq, true, nil
	case errors.Is(err, history.ErrBranchNotFound):
		return 0, false, Errorf(CodeBranchNotFound, "branch %q was deleted during the request", branchID)
	case err != nil:
		return 0, false, storeErr("append", err)
	}
	return 0, false, nil
}

// replaySignals says which signals a replay emits again.
type replaySignals int

const (
	replayQuiet    replaySignals = iota // none: the caller emits what it must
	replayMessages                      // message.added for the recorded messages
	replayRun                           // run.start, message.added, then run.end or run.failed
)

// replayCommitted answers a request from its committed event at seq, and
// emits the signals the operation emitted when it ran (sig): a worker may
// have died after the commit and before them. Observers see them again
// with the same event ids (see ops.Signal), so a repeat is recognisable.
func (e *Engine) replayCommitted(ctx context.Context, req Request, seq uint64, sig replaySignals) (*Result, error) {
	return e.replayCommittedAfter(ctx, req, nil, seq, sig)
}

// replayCommittedAfter is replayCommitted for an operation that recorded
// the messages before in an earlier stage event (run's instruction): their
// message.added signals come first, as when it ran.
func (e *Engine) replayCommittedAfter(ctx context.Context, req Request, before []history.Message, seq uint64, sig replaySignals) (*Result, error) {
	ev, err := e.committedEvent(ctx, req.BranchID, req.ID, seq)
	if err != nil {
		return nil, err
	}
	res, oerr := outcome.Decode(ev.Result, req.ID, req.BranchID)
	messagesAdded := func() {
		for _, msgs := range [][]history.Message{before, ev.Messages} {
			for i := range msgs {
				e.emit(ctx, Signal{Type: SignalMessageAdded, Verb: req.Verb, BranchID: req.BranchID, RequestID: req.ID, Message: &msgs[i]})
			}
		}
	}
	switch sig {
	case replayRun:
		// The same lifecycle as the run (none under a nested turn); a
		// recorded failure is final, so it ends in
		// run.failed.
		return e.runLifecycle(ctx, req, req.BranchID, func() (*Result, error) {
			messagesAdded()
			return res, oerr
		})
	case replayMessages:
		messagesAdded()
	}
	return res, oerr
}

// committedEvent reads the event at seq of branchID's history, which the
// branch's commits say requestID recorded.
func (e *Engine) committedEvent(ctx context.Context, branchID, requestID string, seq uint64) (*history.Event, error) {
	evs, err := e.store.History(ctx, branchID, seq-1, 1)
	if err != nil {
		return nil, storeErr("history", err)
	}
	if len(evs) == 0 || evs[0].Seq != seq || evs[0].RequestID != requestID {
		return nil, Errorf(CodeInternal, "committed event %d of request %q not found in the history of branch %q", seq, requestID, branchID)
	}
	return &evs[0], nil
}
