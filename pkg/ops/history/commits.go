package history

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"iter"
	"maps"
	"slices"
	"sync/atomic"
)

// Commit is one remembered commit: the request id of an EventMessages
// event and the event's history sequence.
type Commit struct {
	ID  string
	Seq uint64
}

// Commits is what a branch remembers of its commits: the request ids of
// its last MaxRememberedCommits EventMessages events, with their
// sequences. The zero value remembers nothing.
//
// A Commits is a value that never changes: [Commits.Append] returns a new
// one and leaves the one it was called on as it was, sharing most of its
// memory with it. Copies of a Branch may therefore be read, and appended
// to, by different goroutines without seeing each other's commits.
//
// The commits are kept oldest first in blocks of commitBlockSize. A full
// block never changes; the last one is filled in place by the first
// value to append to it, and copied by any other. Appending is amortized
// O(1): a block is allocated once every commitBlockSize commits, and the
// oldest block is dropped once none of its commits is remembered.
type Commits struct {
	blocks []*commitBlock
	first  int // position of the oldest remembered commit in blocks[0]
	n      int // how many commits are remembered
}

// commitBlockSize is how many commits a block holds.
const commitBlockSize = 64

// commitBlock holds commitBlockSize commits. Slot i is written once, by
// the value that claimed it (see Commits.add), before any value that
// holds it exists; the filter is written once, when the last slot is.
type commitBlock struct {
	commits [commitBlockSize]Commit
	hashes  [commitBlockSize]uint64 // hashes[i] is the hash of commits[i].ID
	// used counts the slots claimed: a value whose last block holds k
	// commits may write slot k only if it moves used from k to k+1.
	used atomic.Int32
	// filter is set, once the block is full, to two bits per id (see
	// filterBits): an id whose bits are not both set is not in the block.
	filter [16]uint64
}

// commitSeed seeds the hashes of request ids. They are kept in memory
// only, never encoded, so a seed of the process's own will do.
var commitSeed = maphash.MakeSeed()

func hashID(id string) uint64 { return maphash.String(commitSeed, id) }

// filterBits returns the two bits of the block filter that stand for h.
func filterBits(h uint64) (i, j uint) {
	return uint(h % 1024), uint(h>>10) % 1024
}

func (b *commitBlock) mayHold(h uint64) bool {
	i, j := filterBits(h)
	return b.filter[i/64]&(1<<(i%64)) != 0 && b.filter[j/64]&(1<<(j%64)) != 0
}

func (b *commitBlock) fillFilter() {
	for _, h := range b.hashes {
		i, j := filterBits(h)
		b.filter[i/64] |= 1 << (i % 64)
		b.filter[j/64] |= 1 << (j % 64)
	}
}

// NewCommits returns what a branch remembers after committing list:
// the commits appended in order of sequence (of id, for equal
// sequences) as by [Commits.Append], so that only the last
// MaxRememberedCommits are kept and an id is remembered with its first
// sequence. list is not modified.
func NewCommits(list []Commit) Commits {
	byOrder := func(a, b Commit) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
	}
	if !slices.IsSortedFunc(list, byOrder) {
		list = slices.SortedFunc(slices.Values(list), byOrder)
	}
	var c Commits
	for _, x := range list {
		c = c.Append(x.ID, x.Seq)
	}
	return c
}

// Len returns how many commits c remembers.
func (c Commits) Len() int { return c.n }

// IsZero reports whether c remembers nothing.
func (c Commits) IsZero() bool { return c.n == 0 }

// Seq returns the sequence of the commit of request id, and whether c
// remembers it.
func (c Commits) Seq(id string) (uint64, bool) {
	return c.find(id, hashID(id))
}

// All returns the remembered commits, oldest first, as (id, sequence).
func (c Commits) All() iter.Seq2[string, uint64] {
	return func(yield func(string, uint64) bool) {
		for i, b := range c.blocks {
			lo, hi := c.span(i)
			for _, x := range b.commits[lo:hi] {
				if !yield(x.ID, x.Seq) {
					return
				}
			}
		}
	}
}

// Append returns c with the commit of request id at seq added as the
// newest, forgetting the oldest if c already remembers
// MaxRememberedCommits. seq should be above every sequence in c, as
// history sequences are: commits are forgotten in the order they were
// appended. If c remembers id already, Append returns c: a request
// commits once, and its first commit is the one remembered.
func (c Commits) Append(id string, seq uint64) Commits {
	h := hashID(id)
	if _, ok := c.find(id, h); ok {
		return c
	}
	return c.add(Commit{id, seq}, h)
}

// span returns the range of slots of c.blocks[i] that c holds.
func (c Commits) span(i int) (lo, hi int) {
	if i == 0 {
		lo = c.first
	}
	return lo, min(commitBlockSize, c.first+c.n-i*commitBlockSize)
}

// find returns the sequence of id, whose hash is h. The newest blocks
// are searched first: a request is most often looked for again soon.
func (c Commits) find(id string, h uint64) (uint64, bool) {
	for i := len(c.blocks) - 1; i >= 0; i-- {
		b := c.blocks[i]
		lo, hi := c.span(i)
		if hi == commitBlockSize && !b.mayHold(h) {
			continue
		}
		for j := lo; j < hi; j++ {
			if b.hashes[j] == h && b.commits[j].ID == id {
				return b.commits[j].Seq, true
			}
		}
	}
	return 0, false
}

// add appends x, whose id hashes to h and is not in c.
func (c Commits) add(x Commit, h uint64) Commits {
	last := len(c.blocks) - 1
	k := commitBlockSize // commits in the last block
	if last >= 0 {
		_, k = c.span(last)
	}
	switch {
	case k == commitBlockSize:
		b := new(commitBlock)
		b.used.Store(1)
		c.blocks = append(slices.Clip(c.blocks), b)
		last, k = last+1, 0
	case !c.blocks[last].used.CompareAndSwap(int32(k), int32(k+1)):
		// Another value appended to the block first: copy what c holds
		// of it.
		old, b := c.blocks[last], new(commitBlock)
		copy(b.commits[:k], old.commits[:k])
		copy(b.hashes[:k], old.hashes[:k])
		b.used.Store(int32(k + 1))
		c.blocks = append(slices.Clip(c.blocks[:last]), b)
	}
	b := c.blocks[last]
	b.commits[k], b.hashes[k] = x, h
	if k+1 == commitBlockSize {
		b.fillFilter()
	}
	c.n++
	if c.n > MaxRememberedCommits {
		c.first, c.n = c.first+1, c.n-1
		if c.first == commitBlockSize {
			c.blocks, c.first = c.blocks[1:], 0
		}
	}
	return c
}

// String formats c as a map of request ids to sequences.
func (c Commits) String() string {
	return fmt.Sprint(maps.Collect(c.All()))
}

// MarshalJSON encodes c as an object of request ids to sequences.
func (c Commits) MarshalJSON() ([]byte, error) {
	m := make(map[string]uint64, c.n)
	for id, seq := range c.All() {
		m[id] = seq
	}
	return json.Marshal(m)
}

// UnmarshalJSON decodes an object of request ids to sequences, as
// [NewCommits] would remember them. null leaves c as it is.
func (c *Commits) UnmarshalJSON(data []byte) error {
	var m map[string]uint64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if m == nil {
		return nil
	}
	*c = CommitsFromMap(m)
	return nil
}

// CommitsFromMap returns what a branch remembers after committing the
// request ids of m at their sequences, as [NewCommits] does.
func CommitsFromMap(m map[string]uint64) Commits {
	list := make([]Commit, 0, len(m))
	for id, seq := range m {
		list = append(list, Commit{id, seq})
	}
	return NewCommits(list)
}
