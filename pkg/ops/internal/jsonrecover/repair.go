package jsonrecover

import (
	"strings"
)

// Repair rewrites s, JSON written by a model, fixing the usual slips so
// that encoding/json accepts it:
//
//   - single-quoted strings and keys become double-quoted, inner double
//     quotes escaped;
//   - bare object keys are quoted;
//   - the Python literals True, False and None become true, false, null;
//   - comments ("//" and "#" to the end of the line, "/* */") are dropped;
//   - trailing commas, and leading or doubled ones, are dropped;
//   - raw control characters in strings are escaped, an escape JSON does not
//     know keeps its backslash as a character, and \' becomes ';
//   - a closing bracket closes the open brackets down to its own kind (one
//     with no bracket of its kind open is dropped);
//   - an unterminated string is closed, a key left without a value gets
//     null, and the missing closing brackets are appended.
//
// It reads s once: its time is linear in len(s).
func Repair(s string) string {
	r := repairer{s: s}
	r.b.Grow(len(s) + 16)
	r.run()
	return r.b.String()
}

type repairer struct {
	s       string
	b       strings.Builder
	stack   []byte // the open brackets
	open    [2]int // how many '{' and '[' are in stack
	prev    byte   // the last significant byte read outside strings and comments
	pending bool   // a comma is due before the next value or key
}

func (r *repairer) run() {
	s := r.s
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isSpace(c):
			r.b.WriteByte(c)
		case c == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*'), c == '#':
			i = commentEnd(s, i) - 1
		case c == '"' || c == '\'':
			r.flushComma()
			i = r.str(i)
			r.prev = '"'
		case c == '{' || c == '[':
			r.flushComma()
			r.push(c)
		case c == '}' || c == ']':
			r.close(c)
		case c == ',':
			// A comma is written only when a value or key follows it
			// (flushComma), so trailing ones vanish; one that follows no
			// value is dropped now.
			if r.prev != 0 && strings.IndexByte("{[,:", r.prev) < 0 {
				r.pending = true
			}
			r.prev = ','
		case c == ':':
			r.pending = false
			r.b.WriteByte(c)
			r.prev = c
		case isIdentStart(c):
			r.flushComma()
			i = r.ident(i)
		default:
			r.flushComma()
			r.b.WriteByte(c)
			r.prev = c
		}
	}
	if r.prev == ':' {
		r.b.WriteString("null")
	}
	for len(r.stack) > 0 {
		r.pop()
	}
}

// flushComma writes a pending comma: a value or key follows it.
func (r *repairer) flushComma() {
	if r.pending {
		r.b.WriteByte(',')
		r.pending = false
	}
}

func bracketIndex(c byte) int {
	if c == '{' || c == '}' {
		return 0
	}
	return 1
}

func (r *repairer) push(c byte) {
	r.stack = append(r.stack, c)
	r.open[bracketIndex(c)]++
	r.b.WriteByte(c)
	r.prev = c
}

// pop closes the innermost open bracket.
func (r *repairer) pop() {
	top := r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
	r.open[bracketIndex(top)]--
	if top == '{' {
		r.b.WriteByte('}')
	} else {
		r.b.WriteByte(']')
	}
}

// close handles a closing bracket c.
func (r *repairer) close(c byte) {
	k := bracketIndex(c)
	if r.open[k] == 0 {
		return // nothing of its kind to close: dropped
	}
	r.pending = false
	if r.prev == ':' {
		r.b.WriteString("null")
	}
	for {
		top := r.stack[len(r.stack)-1]
		r.pop()
		if bracketIndex(top) == k {
			break
		}
	}
	r.prev = c
}

// str copies the string whose opening quote is s[i] as a double-quoted
// JSON string and returns the index of its closing quote (len(s)-1 when it
// is unterminated: it is closed then).
func (r *repairer) str(i int) int {
	s, b := r.s, &r.b
	q := s[i]
	b.WriteByte('"')
	for j := i + 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == q:
			b.WriteByte('"')
			return j
		case c == '\\':
			if j+1 == len(s) {
				b.WriteString(`\\`)
				continue
			}
			switch n := s[j+1]; {
			case strings.IndexByte(`"\/bfnrt`, n) >= 0:
				b.WriteByte('\\')
				b.WriteByte(n)
				j++
			case n == 'u' && j+6 <= len(s) && isHex4(s[j+2:j+6]):
				b.WriteString(s[j : j+6])
				j += 5
			case n == '\'':
				b.WriteByte('\'')
				j++
			default:
				b.WriteString(`\\`) // a backslash of its own; n is read next
			}
		case c == '"':
			b.WriteString(`\"`) // in a single-quoted string
		case c < 0x20:
			writeControlEscape(b, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return len(s) - 1
}

func writeControlEscape(b *strings.Builder, c byte) {
	const hex = "0123456789abcdef"
	switch c {
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	default:
		b.WriteString(`\u00`)
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
}

func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ident copies the identifier starting at s[i] and returns the index of its
// last byte. Followed by ':' inside an object, it is a key and is quoted;
// otherwise the Python literals become their JSON forms and anything else
// is copied as it is.
func (r *repairer) ident(i int) int {
	s := r.s
	j := i
	for j < len(s) && isIdentPart(s[j]) {
		j++
	}
	word := s[i:j]
	k := j
	for k < len(s) && isSpace(s[k]) {
		k++
	}
	inObject := len(r.stack) > 0 && r.stack[len(r.stack)-1] == '{'
	switch {
	case inObject && r.prev != ':' && k < len(s) && s[k] == ':':
		r.b.WriteByte('"')
		r.b.WriteString(word)
		r.b.WriteByte('"')
	case word == "True":
		r.b.WriteString("true")
	case word == "False":
		r.b.WriteString("false")
	case word == "None":
		r.b.WriteString("null")
	default:
		r.b.WriteString(word)
	}
	r.prev = 'a'
	return j - 1
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '-'
}
