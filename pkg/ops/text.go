package ops

import (
	"github.com/lionbus/lionbus/pkg/wire"
)

// Truncate returns s when it has at most n bytes; otherwise its longest
// prefix of at most n bytes that does not split a UTF-8 sequence, followed
// by "…". It is the one way lionbus shortens text for error messages,
// summaries and logs. An n below 1 gives "…" for any non-empty s.
func Truncate(s string, n int) string { return wire.Truncate(s, n) }
