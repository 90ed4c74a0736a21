package lndl

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// isPySpace reports whether r is white space the way the reference's
// trimming sees it: Go's unicode.IsSpace plus U+001C..U+001F.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// trimSpace trims Unicode white space (see isPySpace) from both ends.
func trimSpace(s string) string {
	return strings.TrimFunc(s, isPySpace)
}

// isSplitBreak reports whether r ends a line when a string is split into
// lines: \n, \r, \v, \f, U+001C..U+001E, U+0085, U+2028 and U+2029.
func isSplitBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// splitList turns the string value of a reference into list items for a
// list field (LNDL.md section 5), trying in order: the trimmed string is
// empty → no items; a JSON array → its elements; a Python list literal →
// its elements; the text holds a newline → its non-blank lines,
// right-trimmed; `[…]` with something inside → the pieces between commas,
// trimmed of white space and then of quotes; else the string itself.
//
// The result never holds more items than the string has bytes, so its
// size is bounded by the input's.
func splitList(s string) []any {
	s = trimSpace(s)
	if s == "" {
		return []any{}
	}
	if s[0] == '[' {
		if v, err := DecodeJSON([]byte(s)); err == nil {
			if arr, ok := v.([]any); ok {
				return arr
			}
		}
		if arr, ok := pythonList(s); ok {
			return arr
		}
	}
	if strings.IndexByte(s, '\n') >= 0 {
		if lines := splitLines(s); len(lines) > 0 {
			return lines
		}
	}
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		inner := s[1 : len(s)-1]
		if trimSpace(inner) != "" {
			var items []any
			for _, p := range strings.Split(inner, ",") {
				if trimSpace(p) == "" {
					continue
				}
				p = strings.Trim(trimSpace(p), `"`)
				p = strings.Trim(p, `'`)
				items = append(items, p)
			}
			if len(items) > 0 {
				return items
			}
		}
	}
	return []any{s}
}

// splitLines returns the non-blank lines of s, right-trimmed, splitting at
// every line break (isSplitBreak; \r\n counts once).
func splitLines(s string) []any {
	n := 1
	for i := 0; i < len(s); i++ {
		// Every line break starts with one of these bytes (U+0085,
		// U+2028 and U+2029 with 0xC2 or 0xE2), so n bounds the lines.
		switch s[i] {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0xc2, 0xe2:
			n++
		}
	}
	out := make([]any, 0, n)
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isSplitBreak(r) {
			i += size
			continue
		}
		if line := strings.TrimRightFunc(s[start:i], isPySpace); trimSpace(line) != "" {
			out = append(out, line)
		}
		i += size
		if r == '\r' && i < len(s) && s[i] == '\n' {
			i++
		}
		start = i
	}
	if line := strings.TrimRightFunc(s[start:], isPySpace); trimSpace(line) != "" {
		out = append(out, line)
	}
	return out
}

// pythonList parses s as a Python list literal with the lact call parser
// (the literal as the one positional argument of a call), so it accepts
// exactly the literals ParseCall does (values JSON cannot hold are not a
// list here).
func pythonList(s string) ([]any, bool) {
	if !strings.HasSuffix(s, "]") {
		// Also keeps a trailing comment or comma from changing the call.
		return nil, false
	}
	c, err := ParseCall("", "f("+s+")")
	if err != nil || len(c.Arguments) != 1 {
		return nil, false
	}
	arr, ok := c.Arguments["_pos_0"].([]any)
	return arr, ok
}
