package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxImportEvents is the most history events one branch.import request
// carries ([wire.MaxImportEvents]). The request's size is bounded as
// every request's is (the worker's request limit, 1 MiB by default).
const MaxImportEvents = wire.MaxImportEvents

type branchImportData = wire.BranchImportRequest

// importPage is a branch.import page as the engine appends it.
type importPage struct {
	Events []history.Event
	Head   uint64
}

// historyEvent is ev as the store keeps it.
func historyEvent(ev wire.Event) history.Event {
	return history.Event{
		Seq: ev.Seq, Type: history.EventType(ev.Type), RequestID: ev.RequestID, Time: ev.Time,
		Settings: ev.Settings, Messages: ev.Messages, Result: ev.Result, BranchID: ev.BranchID,
		Clear: ev.Clear, ModelCalls: ev.ModelCalls, Fork: ev.Fork, Approval: ev.Approval,
		Compaction: cloneCompaction(ev.Compaction),
	}
}

// cloneCompaction copies c (nil stays nil), so that an import may set
// its sequences without touching the request's events.
func cloneCompaction(c *history.Compaction) *history.Compaction {
	if c == nil {
		return nil
	}
	out := *c
	return &out
}

// importedStart is the branch.created an import starts a branch with when
// the export starts at a compaction point c (its source's retention
// dropped the history before it): the branch's settings at that point,
// at its creation time, under the compaction's request id. The
// compaction point, appended right after it, then gives the branch the
// whole state it carries.
func importedStart(c history.Event) history.Event {
	s := c.Compaction.Settings // shared, read only: the store encodes it
	at := c.Compaction.CreatedAt
	if at.IsZero() || at.After(c.Time) {
		at = c.Time
	}
	return history.Event{Type: history.EventCreated, RequestID: c.RequestID, Time: at, BranchID: c.BranchID, Settings: &s}
}

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
	d, err := decodeImport(req.Data)
	if err != nil {
		return nil, err
	}
	if err := checkImportPage(d); err != nil {
		return nil, err
	}
	id := req.BranchID
	for i := range d.Events {
		d.Events[i].BranchID = id
	}
	// An export that starts at a compaction point (its source dropped
	// the history before it) starts the branch with a branch.created of
	// its own, then the compaction point gives it its whole state.
	start := 0
	if d.Head == 0 && d.Events[0].Type == history.EventCompacted {
		d.Events = append([]history.Event{importedStart(d.Events[0])}, d.Events...)
		start = 1
	}
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
	if start > 0 && present > 0 {
		present--
	} else if start > 0 {
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

// checkImportPage checks a page before anything is written.
func checkImportPage(d *importPage) error {
	switch {
	case len(d.Events) == 0:
		return Errorf(CodeInvalidRequest, "data.events is empty: a page holds 1 to %d events", MaxImportEvents)
	case len(d.Events) > MaxImportEvents:
		return Errorf(CodeInvalidRequest, "data.events holds %d events, more than %d: split the import into pages", len(d.Events), MaxImportEvents)
	}
	var seq uint64
	for i, ev := range d.Events {
		switch ev.Type {
		case history.EventCreated, history.EventMessages, history.EventCleared, history.EventUpdated, history.EventForked, history.EventApprovalRequested, history.EventCompacted:
		default:
			return Errorf(CodeInvalidRequest, "data.events[%d]: unknown event type %q", i, ev.Type)
		}
		switch {
		case ev.Type == history.EventCreated && (i != 0 || d.Head != 0):
			return Errorf(CodeInvalidRequest, "data.events[%d]: a %s event only starts an import (the first event of the page of head 0)", i, ev.Type)
		case i == 0 && d.Head == 0 && ev.Type != history.EventCreated && ev.Type != history.EventCompacted:
			return Errorf(CodeInvalidRequest, "data.events[0] is a %s event: the first page of an import (head 0) starts with %s (or %s, for a history cut by retention)", ev.Type, history.EventCreated, history.EventCompacted)
		case ev.Type == history.EventCompacted && ev.Compaction == nil:
			return Errorf(CodeInvalidRequest, "data.events[%d] is a %s event without its compaction", i, ev.Type)
		case ev.Seq != 0 && ev.Seq <= seq:
			return Errorf(CodeInvalidRequest, "data.events[%d]: seq %d after seq %d: the events are out of order", i, ev.Seq, seq)
		case ev.Type == history.EventCreated && ev.Fork != nil:
			return Errorf(CodeInvalidRequest, "data.events[%d] starts a fork of %q at its seq %d, a sequence of the exported cluster: a fork cannot be imported (import its parent, then fork it again)", i, ev.Fork.BranchID, ev.Fork.Seq)
		case ev.Time.IsZero():
			return Errorf(CodeInvalidRequest, "data.events[%d] has no time", i)
		}
		if ev.Seq != 0 {
			seq = ev.Seq
		}
		d.Events[i].Seq = 0
	}
	return nil
}

// decodeImport decodes the data of branch.import keeping every number of
// the events' content, metadata, notes and options as exactly as the
// store keeps numbers (integers as int64 or uint64, others as float64),
// so that an imported branch holds the same values as its source.
func decodeImport(data json.RawMessage) (*importPage, error) {
	if err := decodeData(data, &branchImportData{}); err != nil {
		return nil, err
	}
	var w branchImportData
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return nil, Errorf(CodeInvalidRequest, "bad data: %v", err)
	}
	d := &importPage{Events: make([]history.Event, len(w.Events)), Head: w.Head}
	for i, x := range w.Events {
		d.Events[i] = historyEvent(x)
		ev := &d.Events[i]
		for j := range ev.Messages {
			ev.Messages[j].Content = numbersIn(ev.Messages[j].Content)
			ev.Messages[j].Metadata = numbersIn(ev.Messages[j].Metadata)
		}
		settingsNumbers(ev.Settings)
		if c := ev.Compaction; c != nil {
			for j := range c.Messages {
				c.Messages[j].Content = numbersIn(c.Messages[j].Content)
				c.Messages[j].Metadata = numbersIn(c.Messages[j].Metadata)
			}
			settingsNumbers(&c.Settings)
		}
	}
	return d, nil
}

// settingsNumbers replaces the json.Numbers of s's notes, metadata and
// model options (s may be nil).
func settingsNumbers(s *history.Settings) {
	if s == nil {
		return
	}
	s.Notes, s.Metadata = numbersIn(s.Notes), numbersIn(s.Metadata)
	for _, m := range []*history.ModelRef{s.ChatModel, s.ParseModel} {
		if m != nil {
			m.Options = numbersIn(m.Options)
		}
	}
}

func numbersIn(m map[string]any) map[string]any {
	for k, v := range m {
		m[k] = number(v)
	}
	return m
}

// number replaces the json.Numbers in v.
func number(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
		if n, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return n
		}
		f, _ := x.Float64() // decodeData refused numbers no float64 holds
		return f
	case map[string]any:
		return numbersIn(x)
	case []any:
		for i := range x {
			x[i] = number(x[i])
		}
	}
	return v
}
