package lndl

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// callTokKind is the kind of a token of a lact body.
type callTokKind int

const (
	ctEOF callTokKind = iota
	ctNewline
	ctName
	ctNumber
	ctString
	ctOp
)

// numLit is a decoded number literal.
type numLit struct {
	// isInt is set for an integer; text is then its decimal digits with
	// an optional leading '-'.
	isInt bool
	text  string
	// f is the value of a float literal.
	f float64
	// imag marks a complex literal (`2j`).
	imag bool
}

// strLit is a decoded string literal (one piece of a possible implicit
// concatenation).
type strLit struct {
	s string
	// units holds the code points when an escape produced a UTF-16
	// surrogate; pairs are combined only after concatenation.
	units []rune
	bytes bool
}

// callTok is a token of a lact body. pos is the byte offset of its first
// character in the (newline-translated) body.
type callTok struct {
	kind callTokKind
	pos  int
	text string // a name, an operator
	num  numLit
	str  strLit
}

// callSyntaxError is the reason a body does not parse: a message and the
// position it refers to.
type callSyntaxError struct {
	line, col int
	msg       string
	limit     bool
}

func (e *callSyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.line, e.col, e.msg)
}

// Is reports whether target is ErrCallLimit for an error caused by a
// parser bound.
func (e *callSyntaxError) Is(target error) bool { return e.limit && target == ErrCallLimit }

// callLexer turns a lact body into tokens, following Python's tokenizer
// closely enough for call expressions of literals.
type callLexer struct {
	src    string
	pos    int
	depth  int
	opens  []int // offsets of the open brackets
	toks   []callTok
	digits int // bound on decimal digits of an integer
}

// errAt builds a syntax error at byte offset off.
func (lx *callLexer) errAt(off int, format string, args ...any) error {
	return newCallError(lx.src, off, false, format, args...)
}

func newCallError(src string, off int, limit bool, format string, args ...any) error {
	if off > len(src) {
		off = len(src)
	}
	line := 1 + strings.Count(src[:off], "\n")
	start := strings.LastIndexByte(src[:off], '\n') + 1
	col := 1 + utf8.RuneCountInString(src[start:off])
	return &callSyntaxError{line: line, col: col, msg: fmt.Sprintf(format, args...), limit: limit}
}

// lexCall tokenizes src, which must be valid UTF-8 with '\n' line breaks.
// Tokens are appended to buf, which should be empty; opens is scratch
// space for the bracket offsets, returned for reuse.
func lexCall(src string, buf []callTok, opens []int) ([]callTok, []int, error) {
	lx := &callLexer{src: src, digits: MaxCallIntDigits, toks: buf, opens: opens[:0]}
	if want := min(len(src)/4+2, 512); cap(lx.toks) < want {
		lx.toks = make([]callTok, 0, want)
	}
	if err := lx.run(); err != nil {
		return lx.toks, lx.opens, err
	}
	lx.emit(callTok{kind: ctEOF, pos: len(src)})
	return lx.toks, lx.opens, nil
}

func isCallNameStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r)
}

func isCallNameContinue(r rune) bool {
	return isCallNameStart(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc)
}

// skipBlankLines skips the lines holding only white space or a comment at
// the start of a logical line, then rejects indentation.
func (lx *callLexer) skipBlankLines() error {
	for lx.pos < len(lx.src) {
		start := lx.pos
		indent := false
		for lx.pos < len(lx.src) && strings.IndexByte(" \t\f", lx.src[lx.pos]) >= 0 {
			// A form feed resets the indentation, as in Python.
			indent = lx.src[lx.pos] != '\f'
			lx.pos++
		}
		if lx.pos == len(lx.src) {
			if indent {
				// Python reads a last line of blanks without a line
				// break as indentation.
				return lx.errAt(start, "unexpected indent")
			}
			return nil
		}
		switch lx.src[lx.pos] {
		case '\n':
			lx.pos++
			continue
		case '#':
			for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
				lx.pos++
			}
			continue
		}
		if indent {
			return lx.errAt(start, "unexpected indent")
		}
		return nil
	}
	return nil
}

func (lx *callLexer) emit(t callTok) { lx.toks = append(lx.toks, t) }

func (lx *callLexer) run() error {
	if err := lx.skipBlankLines(); err != nil {
		return err
	}
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			lx.pos++
		case c == '#':
			for lx.pos < len(lx.src) && lx.src[lx.pos] != '\n' {
				lx.pos++
			}
		case c == '\\':
			if lx.pos+1 < len(lx.src) && lx.src[lx.pos+1] == '\n' {
				if lx.pos+2 == len(lx.src) {
					// Python's tokenizer rejects a continuation that
					// ends the source.
					return lx.errAt(lx.pos, "unexpected end of body after line continuation")
				}
				lx.pos += 2
				continue
			}
			return lx.errAt(lx.pos, "unexpected character after line continuation character")
		case c == '\n':
			lx.pos++
			if lx.depth > 0 {
				continue
			}
			if n := len(lx.toks); n > 0 && lx.toks[n-1].kind != ctNewline {
				lx.emit(callTok{kind: ctNewline, pos: lx.pos - 1})
			}
			if err := lx.skipBlankLines(); err != nil {
				return err
			}
		case c >= '0' && c <= '9' || c == '.' && lx.pos+1 < len(lx.src) && isDigit(lx.src[lx.pos+1]):
			if err := lx.number(); err != nil {
				return err
			}
		case c == '"' || c == '\'':
			if err := lx.str(lx.pos, ""); err != nil {
				return err
			}
		case c < utf8.RuneSelf && !isASCIINameStart(c):
			if err := lx.op(); err != nil {
				return err
			}
		default:
			r, size := utf8.DecodeRuneInString(lx.src[lx.pos:])
			if !isCallNameStart(r) {
				return lx.errAt(lx.pos, "invalid character %q", r)
			}
			start := lx.pos
			lx.pos += size
			for lx.pos < len(lx.src) {
				if c := lx.src[lx.pos]; c < utf8.RuneSelf {
					// ASCII: a letter, a digit or '_' continues a name.
					if !isASCIINameStart(c) && !isDigit(c) {
						break
					}
					lx.pos++
					continue
				}
				r, size := utf8.DecodeRuneInString(lx.src[lx.pos:])
				if !isCallNameContinue(r) {
					break
				}
				lx.pos += size
			}
			name := lx.src[start:lx.pos]
			if lx.pos < len(lx.src) && (lx.src[lx.pos] == '"' || lx.src[lx.pos] == '\'') && isStringPrefix(name) {
				if err := lx.str(start, name); err != nil {
					return err
				}
				continue
			}
			lx.emit(callTok{kind: ctName, pos: start, text: name})
		}
	}
	if lx.depth > 0 {
		open := lx.opens[len(lx.opens)-1]
		return lx.errAt(open, "'%c' was never closed", lx.src[open])
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isASCIINameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isStringPrefix reports whether p is a Python string prefix.
func isStringPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "r", "u", "b", "f", "br", "rb", "fr", "rf":
		return true
	}
	return false
}

// op lexes an operator or bracket. Only the operators that can appear in
// a call of literals (and the few that must be recognized to reject them
// precisely) are tokens; anything else is an error.
func (lx *callLexer) op() error {
	start := lx.pos
	c := lx.src[lx.pos]
	next := byte(0)
	if lx.pos+1 < len(lx.src) {
		next = lx.src[lx.pos+1]
	}
	text := lx.src[lx.pos : lx.pos+1]
	switch c {
	case '(', '[', '{':
		if lx.depth >= MaxCallDepth {
			return newCallError(lx.src, start, true, "brackets nested deeper than %d", MaxCallDepth)
		}
		lx.depth++
		lx.opens = append(lx.opens, start)
	case ')', ']', '}':
		if lx.depth == 0 {
			return lx.errAt(start, "unmatched '%c'", c)
		}
		open := lx.src[lx.opens[len(lx.opens)-1]]
		if closerOf(open) != c {
			return lx.errAt(start, "closing '%c' does not match '%c'", c, open)
		}
		lx.depth--
		lx.opens = lx.opens[:len(lx.opens)-1]
	case ',', ':':
		if c == ':' && next == '=' {
			return lx.errAt(start, "assignment expressions are not supported")
		}
	case '.':
		if strings.HasPrefix(lx.src[lx.pos:], "...") {
			text = "..."
		}
	case '=':
		if next == '=' {
			return lx.errAt(start, "comparisons are not supported")
		}
	case '+', '-':
		if next == '=' {
			return lx.errAt(start, "operator '%c=' is not supported", c)
		}
	case '*':
		if next == '*' {
			text = "**"
		}
	default:
		return lx.errAt(start, "unexpected character %q", c)
	}
	lx.pos += len(text)
	lx.emit(callTok{kind: ctOp, pos: start, text: text})
	return nil
}

// closerOf returns the closing bracket for an opening one.
func closerOf(open byte) byte {
	switch open {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

// simpleEscape decodes the one-character escapes of a Python string.
func simpleEscape(e byte) (rune, bool) {
	switch e {
	case '\\', '\'', '"':
		return rune(e), true
	case 'a':
		return 7, true
	case 'b':
		return 8, true
	case 'f':
		return 12, true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'v':
		return 11, true
	}
	return 0, false
}

func isOctal(c byte) bool  { return c >= '0' && c <= '7' }
func isBinary(c byte) bool { return c == '0' || c == '1' }

// digitsRun consumes digit ('_'? digit)* for the given digit test. It
// requires at least one digit when need is set.
func (lx *callLexer) digitsRun(ok func(byte) bool, need bool) (bool, error) {
	seen := false
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		if ok(c) {
			seen = true
			lx.pos++
			continue
		}
		if c == '_' && seen {
			if lx.pos+1 < len(lx.src) && ok(lx.src[lx.pos+1]) {
				lx.pos++
				continue
			}
			return seen, lx.errAt(lx.pos, "invalid number literal")
		}
		break
	}
	if need && !seen {
		return false, lx.errAt(lx.pos, "invalid number literal")
	}
	return seen, nil
}

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number lexes an integer, float or imaginary literal.
func (lx *callLexer) number() error {
	start := lx.pos
	var lit numLit
	src := lx.src
	if src[lx.pos] == '0' && lx.pos+1 < len(src) && strings.IndexByte("xXoObB", src[lx.pos+1]) >= 0 {
		base, bitsPerDigit, ok := 16, 4, isHex
		switch src[lx.pos+1] | 0x20 {
		case 'o':
			base, bitsPerDigit, ok = 8, 3, isOctal
		case 'b':
			base, bitsPerDigit, ok = 2, 1, isBinary
		}
		lx.pos += 2
		if lx.pos < len(src) && src[lx.pos] == '_' {
			lx.pos++
		}
		if _, err := lx.digitsRun(ok, true); err != nil {
			return err
		}
		digits := strings.ReplaceAll(src[start+2:lx.pos], "_", "")
		// Bound the work before converting: the value must fit in
		// MaxCallIntDigits decimal digits.
		if (len(strings.TrimLeft(digits, "0"))-1)*bitsPerDigit > int(float64(lx.digits)*math.Log2(10)) {
			return newCallError(src, start, true, "integer literal exceeds %d digits", lx.digits)
		}
		n, ok2 := new(big.Int).SetString(digits, base)
		if !ok2 {
			return lx.errAt(start, "invalid number literal")
		}
		lit.isInt = true
		lit.text = n.Text(10)
		if len(lit.text) > lx.digits {
			return newCallError(src, start, true, "integer literal exceeds %d digits", lx.digits)
		}
	} else {
		intDigits, err := lx.digitsRun(isDigit, false)
		if err != nil {
			return err
		}
		isFloat := false
		if lx.pos < len(src) && src[lx.pos] == '.' {
			lx.pos++
			isFloat = true
			if _, err := lx.digitsRun(isDigit, !intDigits); err != nil {
				return err
			}
		}
		if lx.pos < len(src) && (src[lx.pos] == 'e' || src[lx.pos] == 'E') {
			lx.pos++
			isFloat = true
			if lx.pos < len(src) && (src[lx.pos] == '+' || src[lx.pos] == '-') {
				lx.pos++
			}
			if _, err := lx.digitsRun(isDigit, true); err != nil {
				return err
			}
		}
		text := strings.ReplaceAll(src[start:lx.pos], "_", "")
		if lx.pos < len(src) && (src[lx.pos] == 'j' || src[lx.pos] == 'J') {
			lx.pos++
			lit.imag = true
		} else if isFloat {
			f, err := strconv.ParseFloat(text, 64)
			if err != nil && !math.IsInf(f, 0) {
				return lx.errAt(start, "invalid number literal")
			}
			lit.f = f
		} else {
			trimmed := strings.TrimLeft(text, "0")
			if trimmed != "" && len(trimmed) != len(text) {
				return lx.errAt(start, "leading zeros in decimal integer literals are not permitted")
			}
			if trimmed == "" {
				trimmed = "0"
			}
			if len(trimmed) > lx.digits {
				return newCallError(src, start, true, "integer literal exceeds %d digits", lx.digits)
			}
			lit.isInt = true
			lit.text = trimmed
		}
	}
	if lx.pos < len(src) {
		r, _ := utf8.DecodeRuneInString(src[lx.pos:])
		if isCallNameContinue(r) {
			return lx.errAt(start, "invalid number literal")
		}
	}
	lx.emit(callTok{kind: ctNumber, pos: start, num: lit, text: src[start:lx.pos]})
	return nil
}

// str lexes a string literal whose prefix starts at start; lx.pos is at
// the opening quote.
func (lx *callLexer) str(start int, prefix string) error {
	p := strings.ToLower(prefix)
	raw := strings.Contains(p, "r")
	isBytes := strings.Contains(p, "b")
	if strings.Contains(p, "f") {
		return lx.errAt(start, "f-strings are not literals")
	}
	src := lx.src
	q := src[lx.pos]
	triple := strings.HasPrefix(src[lx.pos:], strings.Repeat(string(q), 3))
	if triple {
		lx.pos += 3
	} else {
		lx.pos++
	}
	if !triple && !isBytes {
		// Fast path: a one-line literal without escapes is its text.
		rest := src[lx.pos:]
		if end := strings.IndexByte(rest, q); end >= 0 {
			if seg := rest[:end]; strings.IndexByte(seg, '\\') < 0 && strings.IndexByte(seg, '\n') < 0 {
				lx.pos += end + 1
				lx.emit(callTok{kind: ctString, pos: start, str: strLit{s: seg}})
				return nil
			}
		}
	}
	var b strings.Builder
	var units []rune
	put := func(r rune) {
		if units != nil {
			units = append(units, r)
			return
		}
		if r >= 0xD800 && r <= 0xDFFF {
			units = append([]rune(b.String()), r)
			return
		}
		b.WriteRune(r)
	}
	for {
		if lx.pos >= len(src) {
			return lx.errAt(start, "unterminated string literal")
		}
		c := src[lx.pos]
		if c == q && (!triple || strings.HasPrefix(src[lx.pos:], strings.Repeat(string(q), 3))) {
			if triple {
				lx.pos += 3
			} else {
				lx.pos++
			}
			break
		}
		if c == '\n' && !triple {
			return lx.errAt(start, "unterminated string literal")
		}
		r, size := utf8.DecodeRuneInString(src[lx.pos:])
		if isBytes && r >= utf8.RuneSelf {
			return lx.errAt(lx.pos, "bytes can only contain ASCII literal characters")
		}
		if c != '\\' {
			put(r)
			lx.pos += size
			continue
		}
		if lx.pos+1 >= len(src) {
			return lx.errAt(start, "unterminated string literal")
		}
		if raw {
			r2, size2 := utf8.DecodeRuneInString(src[lx.pos+1:])
			put('\\')
			put(r2)
			lx.pos += 1 + size2
			continue
		}
		if err := lx.escape(put, isBytes); err != nil {
			return err
		}
	}
	lx.emit(callTok{kind: ctString, pos: start, str: strLit{s: b.String(), units: units, bytes: isBytes}})
	return nil
}

// escape decodes the escape sequence at lx.pos (a backslash) of a
// non-raw literal.
func (lx *callLexer) escape(put func(rune), isBytes bool) error {
	src := lx.src
	at := lx.pos
	e := src[lx.pos+1]
	lx.pos += 2
	if r, ok := simpleEscape(e); ok {
		put(r)
		return nil
	}
	hex := func(n int) (rune, error) {
		if lx.pos+n > len(src) {
			return 0, lx.errAt(at, "truncated \\%c escape", e)
		}
		v, err := strconv.ParseUint(src[lx.pos:lx.pos+n], 16, 32)
		if err != nil || strings.ContainsAny(src[lx.pos:lx.pos+n], "+-_") {
			return 0, lx.errAt(at, "truncated \\%c escape", e)
		}
		lx.pos += n
		return rune(v), nil
	}
	switch {
	case e == '\n':
		return nil
	case e >= '0' && e <= '7':
		v := rune(e - '0')
		for i := 0; i < 2 && lx.pos < len(src) && src[lx.pos] >= '0' && src[lx.pos] <= '7'; i++ {
			v = v*8 + rune(src[lx.pos]-'0')
			lx.pos++
		}
		put(v)
		return nil
	case e == 'x':
		r, err := hex(2)
		if err != nil {
			return err
		}
		put(r)
		return nil
	case !isBytes && (e == 'u' || e == 'U'):
		n := 4
		if e == 'U' {
			n = 8
		}
		r, err := hex(n)
		if err != nil {
			return err
		}
		if r > unicode.MaxRune {
			return lx.errAt(at, "illegal Unicode character in \\U escape")
		}
		put(r)
		return nil
	case !isBytes && e == 'N':
		return lx.errAt(at, "\\N{...} escapes are not supported")
	}
	// An unknown escape keeps its backslash, as Python does.
	r, size := utf8.DecodeRuneInString(src[lx.pos-1:])
	lx.pos += size - 1
	put('\\')
	put(r)
	return nil
}
