package lndl

import "sync"

// parseScratch is the storage a round parses and indexes a response in:
// the program with its declarations, OUT entries and the first block of
// its lists, and the boxed lvar bodies. Nothing a round returns refers to
// it (assembled values hold strings of the text and values of their own,
// never the syntax tree, and what Resolve needs is copied out), so it
// goes back to a pool when the round ends and the next round reuses it.
type parseScratch struct {
	prog    Program
	out     Out
	d       decls
	lvars   []Lvar
	lacts   []Lact
	entries []OutEntry
	// arena is the first block of the list arena; arenaUsed is the
	// block the last parse took, with its items.
	arena, arenaUsed []Value
	contents         []any
}

// scratchPool holds the parse storage of finished rounds.
var scratchPool = sync.Pool{New: func() any { return new(parseScratch) }}

// maxPooledScratch bounds the elements of each slice a pooled
// parseScratch keeps (a response with more is parsed into fresh storage
// past that size, which is not kept).
const maxPooledScratch = 512

// getScratch returns parse storage from the pool.
func getScratch() *parseScratch {
	return scratchPool.Get().(*parseScratch)
}

// release returns sc to the pool, keeping the storage the round grew
// (within maxPooledScratch). It does not clear it: the next round
// overwrites every element it uses before reading it, and what the last
// round left is kept no longer than the pool keeps sc (sync.Pool drops
// its items over two garbage collections). Nothing may use the program
// parsed into sc afterwards.
func (sc *parseScratch) release() {
	prog := &sc.prog
	sc.lvars = keepLarger(sc.lvars, prog.Lvars)
	sc.lacts = keepLarger(sc.lacts, prog.Lacts)
	if prog.Out != nil {
		sc.entries = keepLarger(sc.entries, prog.Out.Entries)
	}
	sc.arena = keepLarger(sc.arena, sc.arenaUsed)
	sc.contents = keepLarger(sc.contents, sc.d.contents)
	sc.arenaUsed = nil
	// sc.prog, sc.out and sc.d are set afresh by the next round.
	scratchPool.Put(sc)
}

// keepLarger returns the one of kept and used (a slice a round made from
// kept, see makeRoom, and may have grown) to keep for reuse, emptied:
// used when it has more room, and not too much.
func keepLarger[T any](kept, used []T) []T {
	if cap(used) > cap(kept) && cap(used) <= maxPooledScratch {
		return used[:0]
	}
	return kept[:0]
}

// makeRoom returns an empty slice with room for n elements: buf's when
// it has that room, else a new one.
func makeRoom[T any](buf []T, n int) []T {
	if cap(buf) >= n {
		return buf[:0]
	}
	return make([]T, 0, n)
}
