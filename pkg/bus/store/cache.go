package store

import (
	"container/list"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// DefaultCacheBranches is how many branches a [Store] keeps in memory
// when Config.CacheBranches is 0.
const DefaultCacheBranches = 1024

// DefaultCacheBytes bounds the size of the branches a [Store] keeps in
// memory when Config.CacheBytes is 0. A branch's size is the encoded bytes
// it was folded from (see entry.size); in memory it takes a few times that
// (about 3.5 times for short text messages), so the default keeps some
// 110 MiB of branches: room for the branches of 64 requests in flight at
// a few hundred exchanges each. Branches in use at once beyond the bound
// evict each other, and each of their requests reads its branch's
// snapshot again.
const DefaultCacheBytes = 32 << 20

// entry is what a Store knows of one branch: the branch folded up to the
// last event it has seen, and the snapshot that is stored for it. Its
// mutex serializes the loads and appends of the branch within the
// process; other processes are kept apart by the history's expected last
// sequence.
type entry struct {
	mu sync.Mutex
	id string
	// b is the folded branch, nil until loaded. Branches handed to
	// callers share its messages and commits (see view), so it is changed
	// only by appending messages and commits or, for every other change,
	// by replacing it with a copy (see apply).
	b    *history.Branch
	snap snapState
	// size is the encoded bytes b was folded from: the snapshot and
	// segment values it was read from and every history event applied
	// since (since the last clear, which drops the messages before it).
	// It stands for the memory b takes, which grows with it.
	size int

	// held is the size the cache counts for the entry and elem its place
	// in the cache's order; both are guarded by the cache's mutex.
	held int
	elem *list.Element
}

// view returns b for a caller: a shallow copy whose Messages have no spare
// capacity, so that nothing the caller appends reaches the store's copy.
// Callers must not modify what it shares (messages, commits, settings).
func (e *entry) view() *history.Branch {
	v := *e.b
	v.Messages = e.b.Messages[:len(e.b.Messages):len(e.b.Messages)]
	return &v
}

// apply folds ev, whose encoded size is size, into the entry's branch
// without changing anything a caller holds: EventMessages append to the
// shared message array (beyond every caller's length) and to the commits
// (which never change: appending makes new ones that share the old); every
// other event, and an EventMessages that sets a system message, is applied
// to a deep copy, as it may rewrite messages in place (the system
// message). On failure the entry is reset, to be loaded again.
func (e *entry) apply(ev history.Event, size int) error {
	if e.b == nil {
		e.b = &history.Branch{}
	}
	if ev.Type != history.EventMessages || (ev.Settings != nil && ev.Settings.System != "") {
		e.b = e.b.Clone()
		e.snap.rewritten = true
	}
	if ev.Type == history.EventMessages && ev.Clear {
		e.snap.rewritten = true
		e.size = 0
	}
	if err := e.b.Apply(ev); err != nil {
		e.reset()
		return err
	}
	e.size += size
	return nil
}

// reset forgets the entry's branch and snapshot state.
func (e *entry) reset() {
	e.b, e.snap, e.size = nil, snapState{}, 0
}

// cache is a least-recently-used set of entries, bounded by count and by
// the sum of their sizes.
//
// The bound on bytes is there for the garbage collector as much as for
// memory: a folded branch is many small objects with pointers (a map per
// message), which every collection marks again, so branches kept but not
// used make every request of the process dearer, more so the more the
// request allocates (a long branch's).
type cache struct {
	mu       sync.Mutex
	max      int
	maxBytes int
	bytes    int // the sum of the entries' held sizes
	byID     map[string]*entry
	order    *list.List // front: most recently used
}

func newCache(max, maxBytes int) *cache {
	if max <= 0 {
		max = DefaultCacheBranches
	}
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &cache{max: max, maxBytes: maxBytes, byID: make(map[string]*entry), order: list.New()}
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
	c.evict(e)
	return e
}

// resize counts e's current size, if e is still cached, and evicts the
// least recently used other entries while the cache is over its bounds.
// The caller holds e.mu. The entry just used is never evicted here, so a
// single branch larger than the bound stays while it is in use.
func (c *cache) resize(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID[e.id] != e {
		return
	}
	c.bytes += e.size - e.held
	e.held = e.size
	c.evict(e)
}

// evict removes the least recently used entries other than keep while the
// cache holds more than max entries or more than maxBytes. The caller
// holds c.mu.
func (c *cache) evict(keep *entry) {
	for el := c.order.Back(); el != nil && (c.order.Len() > c.max || c.bytes > c.maxBytes); {
		old := el.Value.(*entry)
		el = el.Prev()
		if old != keep {
			c.remove(old)
		}
	}
}

// drop removes the entry of id, if it is e.
func (c *cache) drop(id string, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.byID[id]; ok && cur == e {
		c.remove(e)
	}
}

// remove takes the cached e out of the cache. The caller holds c.mu.
func (c *cache) remove(e *entry) {
	c.order.Remove(e.elem)
	delete(c.byID, e.id)
	c.bytes -= e.held
	e.held = 0
}
