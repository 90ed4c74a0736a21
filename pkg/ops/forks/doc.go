// Package forks answers a fork as a branch of its own: a [Store] wraps a
// [history.Store] so that a fork (a branch whose branch.created names a
// parent and a sequence) loads as its parent was at that sequence
// followed by the fork's own events, while the wrapped store holds and
// folds only the fork's own events. The parent's prefix is read, never
// copied: a fork writes what it adds.
//
// A [Point] names a point of a branch's history (a sequence or a time);
// [Store.FoldAt] folds a branch, a fork's from its parent, up to one.
//
// Its errors are the wire's: *[wire.Error] values with their codes, the
// store's sentinels kept (see package storeerr).
package forks
