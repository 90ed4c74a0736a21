package ops

import (
	"context"
	"errors"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

type branchDeleteData = wire.BranchDeleteRequest

// branchDelete deletes the request's branch: it appends the branch's
// tombstone (a branch.deleted naming the request, its time, data.by and
// data.reason, and the head before it), after which reads answer
// CodeBranchNotFound; with data.purge it also purges the events before
// the tombstone and the snapshot (also of a branch deleted before). A
// branch that forks still read from is
// not deleted (CodeInvalidRequest naming them): delete the forks first.
func (e *Engine) branchDelete(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d branchDeleteData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	if len(d.By) > wire.MaxTombstoneText || len(d.Reason) > wire.MaxTombstoneText {
		return nil, Errorf(CodeInvalidRequest, "data.by and data.reason are at most %d bytes each", wire.MaxTombstoneText)
	}
	id := req.BranchID
	if d.Purge {
		// A branch deleted before is purged now.
		if _, err := e.store.Load(ctx, id); errors.Is(err, history.ErrBranchDeleted) {
			if err := e.store.Delete(ctx, id); err != nil {
				return nil, storeErr("delete", err)
			}
			return deletedResult(wire.BranchDeleted{BranchID: id, Deleted: true, Purged: true})
		}
	}
	b, err := e.load(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := e.checkNoLiveForks(ctx, id); err != nil {
		return nil, err
	}
	ev := history.Event{
		Type: history.EventDeleted, RequestID: req.ID, Time: e.clock(), BranchID: id,
		Tombstone: &history.Tombstone{By: d.By, Reason: d.Reason, Source: Truncate(req.Source, wire.MaxTombstoneText), Head: b.Seq, Purge: d.Purge},
	}
	tomb, err := e.store.Append(ctx, id, ev)
	switch {
	case errors.Is(err, history.ErrAlreadyCommitted):
	case errors.Is(err, history.ErrBranchNotFound):
		return nil, Errorf(CodeBranchNotFound, "branch %q not found", id)
	case err != nil:
		return nil, storeErr("append", err)
	}
	out := wire.BranchDeleted{BranchID: id, Deleted: true}
	if tomb != nil {
		out.Seq = tomb.Seq
	}
	if d.Purge {
		if err := e.store.Delete(ctx, id); err != nil && !errors.Is(err, history.ErrBranchNotFound) {
			return nil, storeErr("delete", err)
		}
		out.Purged = true
	}
	return deletedResult(out)
}

func deletedResult(out wire.BranchDeleted) (*Result, error) {
	v, err := marshalValue(out)
	if err != nil {
		return nil, err
	}
	return &Result{Value: v, BranchID: out.BranchID}, nil
}

// maxForksNamed is how many live forks a refused delete names.
const maxForksNamed = 8

// checkNoLiveForks refuses the deletion of a branch whose forks still
// exist and start from it: their reads fold its events. It reads the
// branch's history for its branch.forked events.
func (e *Engine) checkNoLiveForks(ctx context.Context, id string) error {
	var live []string
	seen := map[string]bool{}
	for after := uint64(0); ; {
		evs, err := e.store.History(ctx, id, after, history.MaxHistoryPage)
		if err != nil {
			return historyErr(id, err)
		}
		for _, ev := range evs {
			if ev.Type != history.EventForked || ev.Fork == nil || seen[ev.Fork.BranchID] {
				continue
			}
			seen[ev.Fork.BranchID] = true
			f, err := e.store.Load(ctx, ev.Fork.BranchID)
			switch {
			case errors.Is(err, history.ErrBranchNotFound):
				continue
			case err != nil:
				var oe *Error
				if errors.As(err, &oe) && oe.Code == CodeBranchNotFound {
					continue
				}
				return storeErr("load", err)
			}
			if f.Fork != nil && f.Fork.BranchID == id {
				live = append(live, f.ID)
			}
		}
		if len(evs) < history.MaxHistoryPage {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	if len(live) == 0 {
		return nil
	}
	named := live[:min(len(live), maxForksNamed)]
	more := ""
	if len(live) > len(named) {
		more = " and others"
	}
	return Errorf(CodeInvalidRequest, "branch %q has %d live forks (%s%s) that read its history: delete them first", id, len(live), strings.Join(named, ", "), more)
}
