package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

type branchForkData = wire.BranchForkRequest

// branchFork makes a fork of the request's branch: a new branch
// (data.branch_id, or a UUID derived from the request id) whose
// branch.created names the parent and the parent's sequence it starts
// from, at data.at_seq, just before the event that recorded
// data.before_message, or at the head. The fork's messages are the
// parent's at that point followed by its own, read from the parent's
// history, never copied: the fork writes its branch.created (the
// parent's settings, no message) and the parent a branch.forked that
// records it (for branch.forks). A redelivered request answers the fork
// it made.
func (e *Engine) branchFork(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d branchForkData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	id, err := newBranchID(req, d.BranchID, "forked")
	if err != nil {
		return nil, err
	}
	if d.AtSeq != 0 && d.BeforeMessage != "" {
		return nil, Errorf(CodeInvalidRequest, "data.at_seq and data.before_message exclude each other")
	}
	if b, ok, err := e.forkMadeBy(ctx, req, id); err != nil || ok {
		if err != nil {
			return nil, err
		}
		return e.recordFork(ctx, req, b, true)
	}
	at := pastPoint{AtSeq: d.AtSeq}
	if d.BeforeMessage != "" {
		seq, err := e.seqBefore(ctx, req.BranchID, d.BeforeMessage)
		if err != nil {
			return nil, err
		}
		at.AtSeq = seq
	}
	var parent *history.Branch
	if at.IsHead() {
		parent, err = e.load(ctx, req.BranchID)
	} else {
		parent, err = e.loadAt(ctx, req.BranchID, at)
	}
	if err != nil {
		return nil, err
	}
	// The parent's settings, not its messages; not its provider's session.
	settings := (&history.Branch{Settings: parent.Settings}).Clone().Settings
	settings.ProviderSession = ""
	ev := history.Event{
		Type: history.EventCreated, RequestID: req.ID, Time: e.clock(), BranchID: id,
		Settings: &settings, ModelCalls: parent.ModelCalls,
		Fork: &history.ForkPoint{BranchID: req.BranchID, Seq: parent.Seq},
	}
	b, err := e.store.Create(ctx, id, ev)
	replayed := false
	switch {
	case errors.Is(err, history.ErrAlreadyCommitted) && b != nil:
		replayed = true
	case errors.Is(err, history.ErrBranchExists):
		// Made by this request since forkMadeBy looked, or another branch's id.
		if b, ok, err := e.forkMadeBy(ctx, req, id); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return e.recordFork(ctx, req, b, true)
		}
		return nil, Errorf(CodeBranchExists, "branch %q already exists", id)
	case err != nil:
		return nil, storeErr("create", err)
	}
	return e.recordFork(ctx, req, b, replayed)
}

// forkMadeBy returns the branch id when req made it (a redelivered
// branch.fork), with ok true.
func (e *Engine) forkMadeBy(ctx context.Context, req Request, id string) (*history.Branch, bool, error) {
	first, err := e.store.History(ctx, id, 0, 1)
	if err != nil || len(first) == 0 || first[0].RequestID != req.ID || first[0].Fork == nil {
		return nil, false, nil
	}
	b, err := e.load(ctx, id)
	return b, err == nil, err
}

// recordFork appends the parent's branch.forked for the fork b (once per
// request: a repeated append is recognised) and answers b.
func (e *Engine) recordFork(ctx context.Context, req Request, b *history.Branch, replayed bool) (*Result, error) {
	rec := history.Event{
		Type: history.EventForked, RequestID: req.ID, Time: b.CreatedAt, BranchID: req.BranchID,
		Fork: &history.ForkPoint{BranchID: b.ID, Seq: b.Fork.Seq},
	}
	_, err := e.store.Append(ctx, req.BranchID, rec)
	switch {
	case errors.Is(err, history.ErrAlreadyCommitted):
	case errors.Is(err, history.ErrBranchNotFound):
		return nil, Errorf(CodeBranchNotFound, "branch %q was deleted while fork %q was made of it", req.BranchID, b.ID)
	case err != nil:
		return nil, storeErr("append", err)
	}
	if err := e.forkNotCut(ctx, req, b); err != nil {
		return nil, err
	}
	v, err := marshalValue(wire.BranchForked{BranchID: b.ID, Fork: *b.Fork, Seq: b.Seq, Messages: len(b.Messages), CreatedAt: b.CreatedAt})
	if err != nil {
		return nil, err
	}
	return &Result{Value: v, BranchID: b.ID, Replayed: replayed}, nil
}

// forkNotCut checks that retention does not drop the prefix of the fork
// b, just recorded in its parent's history: no compaction point between
// the fork point and that record announces a cut after the fork point.
// A compactor reads the parent's history after writing such a point and
// cancels the cut for a fork recorded before it; one recorded after it
// is this check's to refuse. A refused fork gets its tombstone, and the
// request answers CodeInvalidRequest wrapping history.ErrCompacted. It
// reads the parent's events from the fork point to the record.
func (e *Engine) forkNotCut(ctx context.Context, req Request, b *history.Branch) error {
	at := b.Fork.Seq
	for after := at; ; {
		evs, err := e.store.History(ctx, req.BranchID, after, history.MaxHistoryPage)
		if err != nil {
			return historyErr(req.BranchID, err)
		}
		for _, ev := range evs {
			switch {
			case ev.Type == history.EventForked && ev.RequestID == req.ID:
				return nil
			case ev.Type == history.EventCompacted && ev.Compaction != nil && ev.Compaction.DroppedBefore > at:
				return e.refuseCutFork(ctx, req, b, ev)
			}
		}
		if len(evs) < history.MaxHistoryPage {
			return nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// refuseCutFork ends the fork b with its tombstone, its prefix being
// dropped by the retention cut that the compaction point cut announces,
// and returns the request's error.
func (e *Engine) refuseCutFork(ctx context.Context, req Request, b *history.Branch, cut history.Event) error {
	tomb := history.Event{
		Type: history.EventDeleted, RequestID: req.ID, Time: e.clock(), BranchID: b.ID,
		Tombstone: &history.Tombstone{By: "lionbus", Reason: "its fork point was dropped by retention as it was made", Source: Truncate(req.Source, wire.MaxTombstoneText), Head: b.Seq},
	}
	if _, err := e.store.Append(ctx, b.ID, tomb); err != nil && !errors.Is(err, history.ErrAlreadyCommitted) {
		return storeErr("append", err)
	}
	return &Error{
		Code: CodeInvalidRequest,
		Message: fmt.Sprintf("branch %q: its history before seq %d is being dropped by retention (compaction point at seq %d), so fork %q at seq %d was not kept; fork at seq %d or later",
			req.BranchID, cut.Compaction.DroppedBefore, cut.Seq, b.ID, b.Fork.Seq, cut.Compaction.DroppedBefore),
		Err: history.ErrCompacted,
	}
}

// seqBefore returns the sequence of the branch's event just before the
// one that recorded message msgID, which must be the first message of a
// branch.messages event (an exchange's instruction): forking there and
// sending an edited instruction replaces the exchange.
func (e *Engine) seqBefore(ctx context.Context, id, msgID string) (uint64, error) {
	var after, prev uint64
	for {
		evs, err := e.store.History(ctx, id, after, history.MaxHistoryPage)
		if err != nil {
			return 0, historyErr(id, err)
		}
		for _, ev := range evs {
			for j, m := range ev.Messages {
				if m.ID != msgID {
					continue
				}
				if ev.Type != history.EventMessages || j != 0 || prev == 0 {
					return 0, Errorf(CodeInvalidRequest, "message %q of branch %q is not the first message of an exchange (it is message %d of the %s event at seq %d): fork at_seq instead", msgID, id, j, ev.Type, ev.Seq)
				}
				return prev, nil
			}
			prev = ev.Seq
		}
		if len(evs) < history.MaxHistoryPage {
			return 0, Errorf(CodeInvalidRequest, "branch %q has recorded no message %q in its own history (a message of a fork's prefix is its parent's: fork the parent)", id, msgID)
		}
		after = evs[len(evs)-1].Seq
	}
}

type branchForksData = wire.BranchForksRequest

// branchForks lists the forks made of the request's branch: the
// branch.forked events among at most data.limit (default and at most
// [history.MaxHistoryPage]) events of its history after data.after.
func (e *Engine) branchForks(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d branchForksData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	switch {
	case d.Limit < 0:
		return nil, Errorf(CodeInvalidRequest, "data.limit must not be negative, got %d", d.Limit)
	case d.Limit == 0 || d.Limit > history.MaxHistoryPage:
		d.Limit = history.MaxHistoryPage
	}
	evs, err := e.store.History(ctx, req.BranchID, d.After, d.Limit)
	if err != nil {
		return nil, historyErr(req.BranchID, err)
	}
	if len(evs) > d.Limit {
		evs = evs[:d.Limit]
	}
	page := wire.ForkPage{Forks: []wire.Fork{}, Next: d.After, More: len(evs) == d.Limit}
	seen := map[string]bool{}
	for _, ev := range evs {
		page.Next = ev.Seq
		if ev.Type != history.EventForked || ev.Fork == nil || seen[ev.Fork.BranchID] {
			continue
		}
		seen[ev.Fork.BranchID] = true
		page.Forks = append(page.Forks, wire.Fork{
			BranchID: ev.Fork.BranchID, Seq: ev.Fork.Seq, RequestID: ev.RequestID, Time: ev.Time, EventSeq: ev.Seq,
		})
	}
	v, err := marshalValue(page)
	if err != nil {
		return nil, err
	}
	return &Result{Value: v, BranchID: req.BranchID}, nil
}
