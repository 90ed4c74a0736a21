package ops

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/importpage"
	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxImportEvents is the most history events one branch.import request
// carries ([wire.MaxImportEvents]). The request's size is bounded as
// every request's is (the worker's request limit, 1 MiB by default).
const MaxImportEvents = wire.MaxImportEvents

// branchImport appends a page of another branch's history (an export's
// events, in order) to the request's branch: data.head 0 starts the
// branch with the page's branch.created, any other head continues a
// branch whose last event is at that sequence. The events keep
// everything but their sequence and branch id, so the branch folds to
// the same state. A page the branch already holds, in part or whole
// (the page redelivered after a worker stopped half way), is continued
// where it stopped.
func (e *Engine) branchImport(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	d, err := importpage.Decode(req.Data)
	if err != nil {
		return nil, err
	}
	if err := d.Check(); err != nil {
		return nil, err
	}
	id := req.BranchID
	// An export that starts at a compaction point starts the branch with
	// a branch.created of its own.
	started := d.Into(id)
	evs := d.Events
	var present int
	head := d.Head
	if d.Head == 0 {
		b, err := e.store.Create(ctx, id, evs[0])
		switch {
		case err == nil:
			head, evs = b.Seq, evs[1:]
		case errors.Is(err, history.ErrBranchExists), errors.Is(err, history.ErrAlreadyCommitted):
			// Either this page was imported before (in part), or the id
			// is another branch's.
			if present, head, err = e.importedBefore(ctx, id, 0, evs); err != nil {
				return nil, err
			}
			evs = evs[present:]
		default:
			return nil, storeErr("create", err)
		}
	} else {
		if present, head, err = e.importedBefore(ctx, id, d.Head, evs); err != nil {
			return nil, err
		}
		evs = evs[present:]
	}
	imported := len(d.Events) - len(evs) - present
	for _, ev := range evs {
		if c := ev.Compaction; c != nil {
			// Its sequences are the source's: it follows this branch's
			// head here, and this branch dropped nothing before it.
			c.Head, c.DroppedBefore, c.DroppedEvents = head, 0, 0
		}
		b, err := e.store.Append(ctx, id, ev)
		switch {
		case errors.Is(err, history.ErrAlreadyCommitted):
			return nil, Errorf(CodeInvalidRequest, "branch %q already holds the %s event of request %q: the page repeats an event", id, ev.Type, ev.RequestID)
		case errors.Is(err, history.ErrBranchNotFound):
			return nil, Errorf(CodeBranchNotFound, "branch %q was deleted during the import", id)
		case err != nil:
			return nil, storeErr("append", err)
		}
		head = b.Seq
		imported++
	}
	// The branch.created an import made up is none of the page's events.
	if started && present > 0 {
		present--
	} else if started {
		imported--
	}
	v, err := marshalValue(wire.BranchImported{BranchID: id, Head: head, Imported: imported, Present: present})
	if err != nil {
		return nil, err
	}
	return &Result{Value: v, BranchID: id, Replayed: present > 0 && imported == 0}, nil
}

// importedBefore checks where the page evs continues the branch id: after
// its event at seq head (0: from its start), the branch must hold nothing
// but a prefix of evs (events of the same requests and types, in order).
// It returns the length of that prefix and the branch's head.
func (e *Engine) importedBefore(ctx context.Context, id string, head uint64, evs []history.Event) (int, uint64, error) {
	historyErr := func(err error) error {
		if errors.Is(err, history.ErrBranchNotFound) {
			return Errorf(CodeBranchNotFound, "branch %q not found: the first page of an import has head 0", id)
		}
		return storeErr("history", err)
	}
	last := head
	if head != 0 {
		at, err := e.store.History(ctx, id, head-1, 1)
		if err != nil {
			return 0, 0, historyErr(err)
		}
		if len(at) == 0 || at[0].Seq != head {
			return 0, 0, Errorf(CodeInvalidRequest, "data.head %d is not the sequence of an event of branch %q", head, id)
		}
	}
	after, err := e.store.History(ctx, id, head, len(evs)+1)
	if err != nil {
		return 0, 0, historyErr(err)
	}
	if len(after) > len(evs) {
		return 0, 0, e.notAPrefix(id, head)
	}
	for i, x := range after {
		if x.RequestID != evs[i].RequestID || x.Type != evs[i].Type {
			return 0, 0, e.notAPrefix(id, head)
		}
		last = x.Seq
	}
	return len(after), last, nil
}

func (e *Engine) notAPrefix(id string, head uint64) error {
	if head == 0 {
		return Errorf(CodeBranchExists, "branch %q already exists: import into a new branch id (or delete it first)", id)
	}
	return Errorf(CodeInvalidRequest, "branch %q holds other events after seq %d than the page's: it changed since the last page", id, head)
}
