package prompt

import (
	"container/list"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// DefaultMemoBranches is how many branches' rendered history a [Memo]
// keeps by default (the engine's).
const DefaultMemoBranches = 256

// Memo keeps, for the most recently used branches, [Build]'s
// state after the branch's history as it was last rendered, so that the
// next prompt on the branch renders only the messages recorded since:
// rendering every earlier instruction again made each request's cost grow
// with the branch.
//
// A memo is used only when the history still starts with the messages it
// folded: same system text, at least as many messages, and the same
// message ids at the first and the last folded position (recorded
// messages never change, except a system message's text, which the
// prompt takes from the settings; a clear or a re-created branch changes
// those ids; messages without ids are not memoized). FuzzPromptMemo checks
// it against Build. A Memo is safe for concurrent use.
type Memo struct {
	mu    sync.Mutex
	max   int
	m     map[string]*memoEntry
	order *list.List // front: most recently used
}

type memoEntry struct {
	branch          string
	system          string
	n               int // history messages folded
	firstID, lastID string
	fold            *promptFold // never changed once stored
	elem            *list.Element
}

// NewMemo returns a memo of the max most recently used branches; 0 or
// less means DefaultMemoBranches.
func NewMemo(max int) *Memo {
	if max <= 0 {
		max = DefaultMemoBranches
	}
	return &Memo{max: max, m: make(map[string]*memoEntry), order: list.New()}
}

// Build returns Build(system, history, current) for the branch,
// reusing and updating the branch's memo. The memo's fold and the prompt
// share the closed turns, which nothing changes (see promptFold), so
// neither the memo nor the prompt copies the turns rendered before.
func (p *Memo) Build(branch, system string, history []history.Message, current history.Message) Prompt {
	var f *promptFold
	from := 0
	if e := p.lookup(branch); e != nil && e.system == system && len(history) >= e.n &&
		history[0].ID == e.firstID && history[e.n-1].ID == e.lastID {
		f = e.fold.clone()
		from = e.n
	} else {
		f = newPromptFold(system)
	}
	for i := from; i < len(history); i++ {
		f.add(&history[i])
	}
	if len(history) > 0 && history[0].ID != "" && history[len(history)-1].ID != "" {
		// f is not changed after this: the memo keeps it as it is, and
		// the next build continues from a clone.
		p.store(&memoEntry{
			branch: branch, system: system, n: len(history),
			firstID: history[0].ID, lastID: history[len(history)-1].ID,
			fold: f,
		})
	}
	return f.finish(current)
}

func (p *Memo) lookup(branch string) *memoEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[branch]
	if e != nil {
		p.order.MoveToFront(e.elem)
	}
	return e
}

func (p *Memo) store(e *memoEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.m[e.branch]; old != nil {
		p.order.Remove(old.elem)
	}
	e.elem = p.order.PushFront(e)
	p.m[e.branch] = e
	for p.order.Len() > p.max {
		old := p.order.Remove(p.order.Back()).(*memoEntry)
		delete(p.m, old.branch)
	}
}
