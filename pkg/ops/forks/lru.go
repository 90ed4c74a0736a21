package forks

import (
	"container/list"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// branchLRU keeps up to n read-only branches by key, least recently
// used first out.
type branchLRU struct {
	mu    sync.Mutex
	n     int
	order *list.List // of *lruEntry, most recent first
	byKey map[string]*list.Element
}

type lruEntry struct {
	key string
	b   *history.Branch
}

func newBranchLRU(n int) *branchLRU {
	return &branchLRU{n: n, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *branchLRU) get(key string) *history.Branch {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry).b
}

func (c *branchLRU) put(key string, b *history.Branch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		el.Value.(*lruEntry).b = b
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&lruEntry{key, b})
	for c.order.Len() > c.n {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*lruEntry).key)
	}
}

func (c *branchLRU) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.Remove(el)
		delete(c.byKey, key)
	}
}

func (c *branchLRU) dropPrefix(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, el := range c.byKey {
		if len(key) >= len(prefix) && key[:len(prefix)] == prefix {
			c.order.Remove(el)
			delete(c.byKey, key)
		}
	}
}
