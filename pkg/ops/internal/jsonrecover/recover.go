// Package jsonrecover recovers the JSON values a model's text holds: the
// whole text, fenced blocks and bracketed segments, repairing the usual
// slips (single quotes, trailing commas, missing closers, comments, Python
// literals) on the way. It is pure and bounded: see [MaxBytes].
package jsonrecover

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// MaxBytes bounds the text JSON is recovered from (10 MiB, as the
// original's extraction, docs/decisions.md#reference-a5). A longer text
// holds no JSON as far as Recover is concerned.
const MaxBytes = 10 << 20

// Bounds of Recover's candidates, which keep its work linear in the
// text's length with a small factor: at most maxFenceBlocks fenced blocks,
// and at most maxBalancedAttempts bracketed segments whose lengths add up to
// at most balancedBudget times the text's.
const (
	maxFenceBlocks      = 64
	maxBalancedAttempts = 16
	balancedBudget      = 4
)

// ErrNoJSON is returned by Recover when the text holds no JSON object or
// array, even after repairs.
var ErrNoJSON = errors.New("no JSON object or array found in the text")

// fenceRE matches a ``` fenced block, with or without an info string
// (```json, ```JSON, ```jsonc, ```javascript ...); group 1 is its content.
var fenceRE = regexp.MustCompile("(?s)```[ \t]*[A-Za-z0-9_+.-]*[ \t]*\n?(.*?)```")

// Recover returns the JSON objects and arrays found in text, in order of
// preference:
//
//  1. the whole text;
//  2. each ``` fenced block (```json or any other info string, or none),
//     the first maxFenceBlocks of them;
//  3. the bracketed segments of the text, from a '{' or '[' to its balanced
//     closing bracket (or the end of the text), so that JSON amid prose is
//     found: the first from the first bracket, the next after the end of a
//     segment that parsed or after the start of one that did not, within
//     the bounds above.
//
// Each candidate is parsed strictly first, then after repairing the common
// slips of model-written JSON (see Repair). A candidate whose source is
// the same as an earlier one's is not returned twice. Only objects and
// arrays are returned; scalars are not JSON worth extracting.
//
// It returns ErrNoJSON (itself) when nothing is found, and an error wrapping
// it for a text over MaxBytes. It runs in time linear in len(text)
// and never panics.
func Recover(text string) ([]any, error) {
	if len(text) > MaxBytes {
		return nil, fmt.Errorf("%w: the text is %d bytes, over the %d JSON is recovered from", ErrNoJSON, len(text), MaxBytes)
	}
	r := recoverer{tried: map[string]bool{}}
	r.try(text)
	for _, m := range fenceRE.FindAllStringSubmatch(text, maxFenceBlocks) {
		r.try(m[1])
	}
	budget := balancedBudget * len(text)
	for start, attempts := 0, 0; attempts < maxBalancedAttempts && budget > 0; attempts++ {
		i := strings.IndexAny(text[start:], "{[")
		if i < 0 {
			break
		}
		begin := start + i
		end := balancedEnd(text, begin)
		budget -= end - begin
		if r.try(text[begin:end]) {
			start = end
		} else {
			start = begin + 1
		}
	}
	if len(r.out) == 0 {
		return nil, ErrNoJSON
	}
	return r.out, nil
}

// recoverer collects the values of Recover's candidates.
type recoverer struct {
	out   []any
	tried map[string]bool // trimmed sources already parsed: whether they gave a value
}

// try parses s as a candidate and reports whether it gives a value (a
// source tried before gives none again, but its first outcome is reported).
func (r *recoverer) try(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return false
	}
	if ok, seen := r.tried[s]; seen {
		return ok
	}
	v, ok := parseLenient(s)
	r.tried[s] = ok
	if ok {
		r.out = append(r.out, v)
	}
	return ok
}

// parseLenient parses s, which starts with '{' or '[', as a JSON object or
// array, repairing it if needed.
func parseLenient(s string) (any, bool) {
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		return v, isContainer(v)
	}
	if json.Unmarshal([]byte(Repair(s)), &v) == nil {
		return v, isContainer(v)
	}
	return nil, false
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// balancedEnd returns the index just past the bracket that closes the one
// at s[start] ('{' or '['), or len(s) when it is never closed. Brackets in
// strings and comments do not count; a single quote opens a string only
// where a JSON value or key may start (after '{', '[', ',' or ':'), so that
// apostrophes in prose-like text do not. A closing bracket of the wrong
// kind closes the innermost one anyway, as Repair treats it.
func balancedEnd(s string, start int) int {
	depth := 0
	var prev byte // last significant byte outside strings and comments
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || (c == '\'' && strings.IndexByte("{[,:", prev) >= 0):
			i = stringEnd(s, i)
			prev = c
			continue
		case c == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*'), c == '#':
			i = commentEnd(s, i) - 1
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		if !isSpace(c) {
			prev = c
		}
	}
	return len(s)
}

// stringEnd returns the index of the quote that closes the string opened by
// the quote at s[i], or len(s)-1 when it is never closed. A backslash
// escapes the byte after it.
func stringEnd(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j
		}
	}
	return len(s) - 1
}

// commentEnd returns the index just past the comment starting at s[i]
// ("//" or "#" to the end of the line, "/*" to "*/"), or len(s).
func commentEnd(s string, i int) int {
	if strings.HasPrefix(s[i:], "/*") {
		if j := strings.Index(s[i+2:], "*/"); j >= 0 {
			return i + 2 + j + 2
		}
		return len(s)
	}
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
