// Package storeerr classifies the failures of a [history.Store] as the
// operations layer reports them: the store's sentinels and context errors
// keep their identity, an *[wire.Error] keeps its code, anything else is a
// temporary [wire.CodeUnavailable].
package storeerr
