package store

import (
	"container/list"
	"maps"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops"
)

// DefaultCacheBranches is how many branches a [Store] keeps in memory
// when Config.CacheBranches is 0.
const DefaultCacheBranches = 1024

// entry is what a Store knows of one branch: the branch folded up to the
// last event it has seen, and the snapshot that is stored for it. Its
// mutex serializes the loads and appends of the branch within the
// process; other processes are kept apart by the history's expected last
// sequence.
type entry struct {
	mu sync.Mutex
	id string
	// b is the folded branch, nil until loaded. Branches handed to
	// callers share its messages (see view), so it is changed only by
	// appending messages or, for every other change, by replacing it
	// with a copy (see apply).
	b *ops.Branch
	// shared reports that b.Commits was handed to a caller since b was
	// last copied: the next commit copies the map first.
	shared bool
	snap   snapState
	elem   *list.Element
}

// view returns b for a caller: a shallow copy whose Messages have no spare
// capacity, so that nothing the caller appends reaches the store's copy.
// Callers must not modify what it shares (messages, commits, settings).
func (e *entry) view() *ops.Branch {
	v := *e.b
	v.Messages = e.b.Messages[:len(e.b.Messages):len(e.b.Messages)]
	e.shared = true
	return &v
}

// apply folds ev into the entry's branch without changing anything a
// caller holds: EventMessages append to the shared message array (beyond
// every caller's length) and, when the commits were handed out, to a copy
// of them; every other event is applied to a deep copy, as it may rewrite
// messages in place (a new system message). On failure the entry is
// reset, to be loaded again.
func (e *entry) apply(ev ops.Event) error {
	if e.b == nil {
		e.b = &ops.Branch{}
	}
	switch {
	case ev.Type != ops.EventMessages:
		e.b = e.b.Clone()
		e.snap.rewritten = true
	case e.shared:
		n := *e.b
		n.Commits = maps.Clone(e.b.Commits)
		e.b = &n
	}
	e.shared = false
	if ev.Type == ops.EventMessages && ev.Clear {
		e.snap.rewritten = true
	}
	if err := e.b.Apply(ev); err != nil {
		e.reset()
		return err
	}
	return nil
}

// reset forgets the entry's branch and snapshot state.
func (e *entry) reset() {
	e.b, e.shared, e.snap = nil, false, snapState{}
}

// cache is a least-recently-used set of entries, bounded by count.
type cache struct {
	mu    sync.Mutex
	max   int
	byID  map[string]*entry
	order *list.List // front: most recently used
}

func newCache(max int) *cache {
	if max <= 0 {
		max = DefaultCacheBranches
	}
	return &cache{max: max, byID: make(map[string]*entry), order: list.New()}
}

// get returns the entry of id, creating an empty one, and marks it used.
// An entry evicted while a caller holds it stays valid for that caller;
// the next get creates a new one.
func (c *cache) get(id string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		c.order.MoveToFront(e.elem)
		return e
	}
	e := &entry{id: id}
	e.elem = c.order.PushFront(e)
	c.byID[id] = e
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(*entry)
		delete(c.byID, old.id)
	}
	return e
}

// drop removes the entry of id, if it is e.
func (c *cache) drop(id string, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.byID[id]; ok && cur == e {
		c.order.Remove(e.elem)
		delete(c.byID, id)
	}
}
