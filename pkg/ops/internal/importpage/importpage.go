package importpage

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/decode"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Page is a branch.import page as the engine appends it.
type Page struct {
	// Events are the page's events, in order, without their sequences
	// once checked.
	Events []history.Event
	// Head is the sequence of the branch's event the page continues
	// after; 0 starts the branch.
	Head uint64
}

// Decode decodes the data of branch.import keeping every number of the
// events' content, metadata, notes and options as exactly as the store
// keeps numbers (integers as int64 or uint64, others as float64), so that
// an imported branch holds the same values as its source.
func Decode(data json.RawMessage) (*Page, error) {
	if err := decode.Data(data, &wire.BranchImportRequest{}); err != nil {
		return nil, err
	}
	var w wire.BranchImportRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidRequest, "bad data: %v", err)
	}
	d := &Page{Events: make([]history.Event, len(w.Events)), Head: w.Head}
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

// Check checks the page before anything is written: 1 to
// [wire.MaxImportEvents] events of known types, in order, stamped, a
// branch.created only first on the first page (and never a fork's). It
// clears the events' sequences (the branch gives its own).
func (d *Page) Check() error {
	switch {
	case len(d.Events) == 0:
		return wire.Errorf(wire.CodeInvalidRequest, "data.events is empty: a page holds 1 to %d events", wire.MaxImportEvents)
	case len(d.Events) > wire.MaxImportEvents:
		return wire.Errorf(wire.CodeInvalidRequest, "data.events holds %d events, more than %d: split the import into pages", len(d.Events), wire.MaxImportEvents)
	}
	var seq uint64
	for i, ev := range d.Events {
		switch ev.Type {
		case history.EventCreated, history.EventMessages, history.EventCleared, history.EventUpdated, history.EventForked, history.EventApprovalRequested, history.EventCompacted:
		default:
			return wire.Errorf(wire.CodeInvalidRequest, "data.events[%d]: unknown event type %q", i, ev.Type)
		}
		switch {
		case ev.Type == history.EventCreated && (i != 0 || d.Head != 0):
			return wire.Errorf(wire.CodeInvalidRequest, "data.events[%d]: a %s event only starts an import (the first event of the page of head 0)", i, ev.Type)
		case i == 0 && d.Head == 0 && ev.Type != history.EventCreated && ev.Type != history.EventCompacted:
			return wire.Errorf(wire.CodeInvalidRequest, "data.events[0] is a %s event: the first page of an import (head 0) starts with %s (or %s, for a history cut by retention)", ev.Type, history.EventCreated, history.EventCompacted)
		case ev.Type == history.EventCompacted && ev.Compaction == nil:
			return wire.Errorf(wire.CodeInvalidRequest, "data.events[%d] is a %s event without its compaction", i, ev.Type)
		case ev.Seq != 0 && ev.Seq <= seq:
			return wire.Errorf(wire.CodeInvalidRequest, "data.events[%d]: seq %d after seq %d: the events are out of order", i, ev.Seq, seq)
		case ev.Type == history.EventCreated && ev.Fork != nil:
			return wire.Errorf(wire.CodeInvalidRequest, "data.events[%d] starts a fork of %q at its seq %d, a sequence of the exported cluster: a fork cannot be imported (import its parent, then fork it again)", i, ev.Fork.BranchID, ev.Fork.Seq)
		case ev.Time.IsZero():
			return wire.Errorf(wire.CodeInvalidRequest, "data.events[%d] has no time", i)
		}
		if ev.Seq != 0 {
			seq = ev.Seq
		}
		d.Events[i].Seq = 0
	}
	return nil
}

// Into makes the checked page the events of branch id: each event's
// branch id is id, and the first page of an export that starts at a
// compaction point (its source dropped the history before it) starts
// with a branch.created of its own ([Start]), after which the compaction
// point gives the branch its whole state. It reports whether it added
// that event, which is none of the page's.
func (d *Page) Into(id string) (started bool) {
	for i := range d.Events {
		d.Events[i].BranchID = id
	}
	if d.Head == 0 && d.Events[0].Type == history.EventCompacted {
		d.Events = append([]history.Event{Start(d.Events[0])}, d.Events...)
		return true
	}
	return false
}

// Start is the branch.created an import starts a branch with when the
// export starts at a compaction point c (its source's retention dropped
// the history before it): the branch's settings at that point, at its
// creation time, under the compaction's request id. The compaction
// point, appended right after it, then gives the branch the whole state
// it carries.
func Start(c history.Event) history.Event {
	s := c.Compaction.Settings // shared, read only: the store encodes it
	at := c.Compaction.CreatedAt
	if at.IsZero() || at.After(c.Time) {
		at = c.Time
	}
	return history.Event{Type: history.EventCreated, RequestID: c.RequestID, Time: at, BranchID: c.BranchID, Settings: &s}
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
		f, _ := x.Float64() // decode.Data refused numbers no float64 holds
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
