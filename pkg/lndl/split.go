package lndl

import (
	"strings"
	"unicode/utf8"
)

// splitList turns the string value of a reference into list items for a
// list field (docs/lndl.md#assembly), trying in order: the trimmed string is
// empty → no items; a JSON array → its elements; a Python list literal →
// its elements; the text holds a newline → its non-blank lines,
// right-trimmed; `[…]` with something inside → the pieces between commas,
// trimmed of white space and then of quotes; else the string itself.
//
// The result never holds more items than the string has bytes, so its
// size is bounded by the input's.
func splitList(s string) []any {
	s = trimLNDLSpace(s)
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
		if trimLNDLSpace(inner) != "" {
			var items []any
			for _, p := range strings.Split(inner, ",") {
				if trimLNDLSpace(p) == "" {
					continue
				}
				p = strings.Trim(trimLNDLSpace(p), `"`)
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
// every line break as Python's str.splitlines() does (see pyLines).
func splitLines(s string) []any {
	if n, plain := plainLines(s); plain {
		// Fast path: ASCII text whose only line breaks are '\n'; the
		// white space to trim is ' ', '\t' and 0x1f, and a line that is
		// not empty once right-trimmed is not blank.
		out := make([]any, 0, n)
		for len(s) > 0 {
			line := s
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				line, s = s[:i], s[i+1:]
			} else {
				s = ""
			}
			end := len(line)
			for end > 0 && (line[end-1] == ' ' || line[end-1] == '\t' || line[end-1] == 0x1f) {
				end--
			}
			if end > 0 {
				out = append(out, line[:end])
			}
		}
		return out
	}
	return splitLinesGeneral(s)
}

// splitLinesGeneral is splitLines for any text.
func splitLinesGeneral(s string) []any {
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
	if n == 1+strings.Count(s, "\n") {
		// Fast path: every line break is a '\n'.
		for len(s) > 0 {
			line := s
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				line, s = s[:i], s[i+1:]
			} else {
				s = ""
			}
			if line = strings.TrimRightFunc(line, isLNDLSpace); trimLNDLSpace(line) != "" {
				out = append(out, line)
			}
		}
		return out
	}
	for line := range pyLines(s) {
		if line = strings.TrimRightFunc(line, isLNDLSpace); trimLNDLSpace(line) != "" {
			out = append(out, line)
		}
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

// plainLines reports whether s is ASCII with no line break but '\n', and
// its number of lines.
func plainLines(s string) (int, bool) {
	n := 1
	for i := 0; i < len(s); i++ {
		if c := s[i]; lineByteClass[c] != 0 {
			if lineByteClass[c] == lineBreakOther {
				return 0, false
			}
			n++
		}
	}
	return n, true
}

// Classes of bytes for plainLines.
const (
	lineBreakLF    = 1 // '\n'
	lineBreakOther = 2 // another line break's first byte, or non-ASCII
)

// lineByteClass classifies every byte value for plainLines.
var lineByteClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c == '\n':
			t[c] = lineBreakLF
		case c >= utf8.RuneSelf, c == '\r', c == '\v', c == '\f', c == 0x1c, c == 0x1d, c == 0x1e:
			t[c] = lineBreakOther
		}
	}
	return t
}()
