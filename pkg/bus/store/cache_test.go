package store

import (
	"fmt"
	"slices"
	"testing"
)

// cached returns the ids the cache holds, most recently used first, and
// checks that its byte count is the sum of what it holds.
func cached(t *testing.T, c *cache) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	sum := 0
	for el := c.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		ids = append(ids, e.id)
		sum += e.held
	}
	if sum != c.bytes {
		t.Fatalf("cache counts %d bytes, its entries hold %d", c.bytes, sum)
	}
	if len(ids) != len(c.byID) {
		t.Fatalf("cache orders %d entries, indexes %d", len(ids), len(c.byID))
	}
	return ids
}

// use gets the entry of id, as Load and Append do, and gives it size.
func use(c *cache, id string, size int) *entry {
	e := c.get(id)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.size = size
	c.resize(e)
	return e
}

// TestCache_evicts_by_bytes: the least recently used entries go when the
// sizes of the entries add up to more than the byte bound, however few they
// are; the entry just used stays even when it alone is over the bound.
func TestCache_evicts_by_bytes(t *testing.T) {
	c := newCache(100, 1000)
	use(c, "a", 400)
	use(c, "b", 400)
	if got, want := cached(t, c), []string{"b", "a"}; !slices.Equal(got, want) {
		t.Fatalf("cached %v, want %v", got, want)
	}
	use(c, "a", 400) // a is now the most recently used
	use(c, "c", 300) // 1100 bytes: b goes
	if got, want := cached(t, c), []string{"c", "a"}; !slices.Equal(got, want) {
		t.Fatalf("after c: cached %v, want %v", got, want)
	}
	// An entry that grows pushes out the others, oldest first.
	use(c, "c", 700)
	if got, want := cached(t, c), []string{"c"}; !slices.Equal(got, want) {
		t.Fatalf("after c grew: cached %v, want %v", got, want)
	}
	// One entry larger than the bound stays while it is the one in use.
	use(c, "c", 5000)
	if got, want := cached(t, c), []string{"c"}; !slices.Equal(got, want) {
		t.Fatalf("after c outgrew the bound: cached %v, want %v", got, want)
	}
	use(c, "d", 10)
	if got, want := cached(t, c), []string{"d"}; !slices.Equal(got, want) {
		t.Fatalf("after d: cached %v, want %v", got, want)
	}
}

// TestCache_bounds_count_too: the count bound still applies to small
// entries.
func TestCache_bounds_count_too(t *testing.T) {
	c := newCache(3, 1<<20)
	for i := range 5 {
		use(c, fmt.Sprint(i), 1)
	}
	if got, want := cached(t, c), []string{"4", "3", "2"}; !slices.Equal(got, want) {
		t.Fatalf("cached %v, want %v", got, want)
	}
}

// TestCache_evicted_entry_is_not_counted: an entry evicted while its holder
// still works on it (as a Load in progress) is not counted again when the
// holder is done, nor is one dropped; a new entry of its id is counted
// afresh.
func TestCache_evicted_entry_is_not_counted(t *testing.T) {
	c := newCache(100, 1000)
	held := c.get("a")
	held.mu.Lock()
	use(c, "b", 900)
	use(c, "c", 900) // evicts a (size 0 so far, the oldest), then b
	if got, want := cached(t, c), []string{"c"}; !slices.Equal(got, want) {
		t.Fatalf("cached %v, want %v", got, want)
	}
	held.size = 800
	c.resize(held)
	held.mu.Unlock()
	if got, want := cached(t, c), []string{"c"}; !slices.Equal(got, want) {
		t.Fatalf("after the evicted a was resized: cached %v, want %v", got, want)
	}
	a := use(c, "a", 50)
	if a == held {
		t.Fatal("get returned the evicted entry")
	}
	c.drop("a", a)
	c.drop("c", held) // not c's entry: nothing happens
	if got, want := cached(t, c), []string{"c"}; !slices.Equal(got, want) {
		t.Fatalf("after the drops: cached %v, want %v", got, want)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes != 900 {
		t.Fatalf("cache counts %d bytes, want 900", c.bytes)
	}
}
