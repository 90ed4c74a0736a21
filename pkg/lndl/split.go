package lndl

import "strings"

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
