package ops

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// DefaultHistoryLimit is the page size of branch.history when the request
// names none; the largest is MaxHistoryPage.
const DefaultHistoryLimit = 100

type branchCreateData = wire.BranchCreateRequest

// branchCreate starts a branch. The id is data.branch_id or the request's
// branch id (they must agree when both are given), else a UUID derived from
// the request id (see requestScopedID), so a redelivery finds its branch.
// A redelivered create (same request id) answers the existing branch.
func (e *Engine) branchCreate(ctx context.Context, req Request) (*Result, error) {
	var d branchCreateData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	id := d.BranchID
	switch {
	case id != "" && req.BranchID != "" && id != req.BranchID:
		return nil, Errorf(CodeInvalidRequest, "data.branch_id %q and the request's branch id %q differ", id, req.BranchID)
	case id == "":
		id = req.BranchID
	}
	if id == "" {
		id = requestScopedID(req.ID)
	}
	if err := checkID("branch_id", id); err != nil {
		return nil, err
	}
	for i, t := range d.Tools {
		if !ValidID(t) {
			return nil, Errorf(CodeInvalidRequest, "tools[%d] %q is not a valid tool name ([A-Za-z0-9_-], 1..%d characters)", i, t, MaxIDLength)
		}
	}
	now := e.clock()
	settings := history.Settings{System: d.System, ChatModel: d.ChatModel, ParseModel: d.ParseModel, Tools: d.Tools, Metadata: d.Metadata}
	ev := history.Event{Type: history.EventCreated, RequestID: req.ID, Time: now, BranchID: id, Settings: &settings}
	if d.System != "" {
		ev.Messages = []history.Message{history.NewSystemMessage(d.System, now)}
	}
	return e.createBranch(ctx, req, id, ev)
}

// createBranch stores ev as the first event of id, answering a redelivered
// request from the existing branch.
func (e *Engine) createBranch(ctx context.Context, req Request, id string, ev history.Event) (*Result, error) {
	b, err := e.store.Create(ctx, id, ev)
	replayed := false
	switch {
	case errors.Is(err, history.ErrAlreadyCommitted) && b != nil:
		// A store that recognises the request's own creation says so
		// directly, with the branch.
		replayed = true
	case errors.Is(err, history.ErrBranchExists):
		first, herr := e.store.History(ctx, id, 0, 1)
		if herr != nil || len(first) == 0 || first[0].RequestID != req.ID {
			return nil, Errorf(CodeBranchExists, "branch %q already exists", id)
		}
		if b, err = e.store.Load(ctx, id); err != nil {
			return nil, storeErr("load", err)
		}
		replayed = true
	case err != nil:
		return nil, storeErr("create", err)
	}
	return branchResult(b, replayed)
}

func branchResult(b *history.Branch, replayed bool) (*Result, error) {
	v, err := marshalValue(b)
	if err != nil {
		return nil, err
	}
	return &Result{Value: v, BranchID: b.ID, Replayed: replayed}, nil
}

// requireBranchID checks the request's branch id.
func requireBranchID(req Request) error {
	return checkID("branch id", req.BranchID)
}

func (e *Engine) load(ctx context.Context, id string) (*history.Branch, error) {
	b, err := e.store.Load(ctx, id)
	if err != nil {
		if errors.Is(err, history.ErrBranchDeleted) {
			return nil, Errorf(CodeBranchNotFound, "branch %q not found: it was deleted (its history ends with its tombstone)", id)
		}
		if errors.Is(err, history.ErrBranchNotFound) {
			return nil, Errorf(CodeBranchNotFound, "branch %q not found", id)
		}
		return nil, storeErr("load", err)
	}
	return b, nil
}

type branchGetData = wire.BranchGetRequest

// branchGet returns the folded branch: at its head, or as it was at
// data.at_seq or data.at_time (see loadAt).
func (e *Engine) branchGet(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d branchGetData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	at := pastPoint{AtSeq: d.AtSeq, AtTime: d.AtTime}
	if err := at.Check(); err != nil {
		return nil, err
	}
	load := e.load
	if !at.IsHead() {
		load = func(ctx context.Context, id string) (*history.Branch, error) { return e.loadAt(ctx, id, at) }
	}
	b, err := load(ctx, req.BranchID)
	if err != nil {
		return nil, err
	}
	return branchResult(b, false)
}

type branchCloneData = wire.BranchCloneRequest

// newBranchID is the id of the branch a clone or a fork of req's branch
// makes: dataID, or a UUID derived from the request id (see
// requestScopedID), so that a redelivery makes the same. It must be a
// valid id other than the source's (what is "cloned" or "forked", for the
// error).
func newBranchID(req Request, dataID, what string) (string, error) {
	id := dataID
	if id == "" {
		id = requestScopedID(req.ID)
	}
	if err := checkID("data.branch_id", id); err != nil {
		return "", err
	}
	if id == req.BranchID {
		return "", Errorf(CodeInvalidRequest, "data.branch_id %q is the branch being %s", id, what)
	}
	return id, nil
}

// branchClone copies the request's branch (settings, messages and model-call
// count; message ids are kept) into a new branch: data.branch_id or a UUID
// derived from the request id (see requestScopedID).
func (e *Engine) branchClone(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d branchCloneData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	id, err := newBranchID(req, d.BranchID, "cloned")
	if err != nil {
		return nil, err
	}
	src, err := e.load(ctx, req.BranchID)
	if err != nil {
		return nil, err
	}
	copied := src.Clone()
	settings := copied.Settings
	settings.ProviderSession = ""
	ev := history.Event{
		Type: history.EventCreated, RequestID: req.ID, Time: e.clock(), BranchID: id,
		Settings: &settings, Messages: copied.Messages, ModelCalls: src.ModelCalls,
	}
	return e.createBranch(ctx, req, id, ev)
}

// branchClear removes every message but the system message.
func (e *Engine) branchClear(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	ev := history.Event{Type: history.EventCleared, RequestID: req.ID, Time: e.clock(), BranchID: req.BranchID}
	b, err := e.store.Append(ctx, req.BranchID, ev)
	replayed := false
	switch {
	case errors.Is(err, history.ErrAlreadyCommitted):
		if b == nil {
			if b, err = e.load(ctx, req.BranchID); err != nil {
				return nil, err
			}
		}
		replayed = true
	case errors.Is(err, history.ErrBranchNotFound):
		return nil, Errorf(CodeBranchNotFound, "branch %q not found", req.BranchID)
	case err != nil:
		return nil, storeErr("append", err)
	}
	return branchResult(b, replayed)
}

type branchHistoryData = wire.BranchHistoryRequest

// HistoryPage is the value of a branch.history result.
type HistoryPage struct {
	// Events are the history events with Seq > after, oldest first.
	Events []history.Event `json:"events"`
	// Next is the Seq of the last returned event (the "after" of the next
	// page), or the request's after when no event was returned.
	Next uint64 `json:"next"`
	// More is true when the page is full, so there may be more events.
	More bool `json:"more"`
}

// branchHistory returns at most data.limit events (default
// DefaultHistoryLimit, at most MaxHistoryPage) after data.after, and,
// with data.at_seq or data.at_time, none after that point: the events a
// branch.get at that point folds.
func (e *Engine) branchHistory(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d branchHistoryData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	switch {
	case d.Limit < 0:
		return nil, Errorf(CodeInvalidRequest, "data.limit must not be negative, got %d", d.Limit)
	case d.Limit == 0:
		d.Limit = DefaultHistoryLimit
	case d.Limit > history.MaxHistoryPage:
		d.Limit = history.MaxHistoryPage
	}
	at := pastPoint{AtSeq: d.AtSeq, AtTime: d.AtTime}
	if err := at.Check(); err != nil {
		return nil, err
	}
	if !at.IsHead() {
		if _, err := e.checkHead(ctx, req.BranchID, at); err != nil {
			return nil, err
		}
	}
	evs, err := e.store.History(ctx, req.BranchID, d.After, d.Limit)
	if err != nil {
		if errors.Is(err, history.ErrBranchNotFound) {
			return nil, Errorf(CodeBranchNotFound, "branch %q not found", req.BranchID)
		}
		return nil, storeErr("history", err)
	}
	if len(evs) > d.Limit {
		evs = evs[:d.Limit]
	}
	more := len(evs) == d.Limit
	for i, ev := range evs {
		if !at.Includes(ev) {
			evs, more = evs[:i], false
			break
		}
	}
	if at.AtSeq != 0 && len(evs) > 0 && evs[len(evs)-1].Seq >= at.AtSeq {
		more = false
	}
	page := HistoryPage{Events: evs, Next: d.After, More: more}
	if len(evs) > 0 {
		page.Next = evs[len(evs)-1].Seq
	}
	if page.Events == nil {
		page.Events = []history.Event{}
	}
	v, err := marshalValue(page)
	if err != nil {
		return nil, err
	}
	return &Result{Value: v, BranchID: req.BranchID}, nil
}
