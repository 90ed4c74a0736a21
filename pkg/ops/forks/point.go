package forks

import (
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Point names a point of a branch's history that a read of its past
// (branch.get, branch.history, branch.fork) reads at: a history sequence,
// or a time. The zero value is the head.
type Point struct {
	// AtSeq is a history sequence: the branch as the events with
	// seq <= AtSeq fold it. 0 means the head.
	AtSeq uint64
	// AtTime is a time: the branch as the events up to the first one
	// stamped after it fold it. nil means the head.
	AtTime *time.Time
}

// IsHead reports whether p names the branch's head.
func (p Point) IsHead() bool { return p.AtSeq == 0 && p.AtTime == nil }

// Check refuses, with a CodeInvalidRequest error, a point that names
// both a sequence and a time (a request's data.at_seq and data.at_time).
func (p Point) Check() error {
	if p.AtSeq != 0 && p.AtTime != nil {
		return wire.Errorf(wire.CodeInvalidRequest, "data.at_seq and data.at_time exclude each other")
	}
	return nil
}

// Includes reports whether ev is at or before p: the events a read at p
// folds are the longest run of events from the start that p includes.
func (p Point) Includes(ev history.Event) bool {
	switch {
	case p.AtSeq != 0:
		return ev.Seq <= p.AtSeq
	case p.AtTime != nil:
		return !ev.Time.After(*p.AtTime)
	}
	return true
}

// FirstPage is the first page of history events a fold at a point
// reads; the pages double up to [history.MaxHistoryPage].
const FirstPage = 64
