// Package logs holds the zerolog helpers the bus packages share.
package logs

import "github.com/rs/zerolog"

// Discards reports whether l drops error records: the zero Logger, a
// disabled one, or zerolog.Nop. Callers use it to tell "no logger given"
// from a logger that was set.
func Discards(l zerolog.Logger) bool {
	e := l.Error()
	if e == nil {
		return true
	}
	e.Discard()
	return false
}
