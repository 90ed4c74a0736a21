package wire

import "unicode/utf8"

// Truncate returns s when it has at most n bytes; otherwise its longest
// prefix of at most n bytes that does not split a UTF-8 sequence, followed
// by "…". It is the one way lionbus shortens text for error messages,
// summaries and logs. An n below 1 gives "…" for any non-empty s.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
