package lndl

import (
	"iter"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Character classes shared by the stages. They follow the reference's
// Python semantics: its regular expressions and str methods are Unicode
// aware, so "white space" and "word character" are Unicode classes.

// isLNDLSpace reports whether r is white space in the sense of Python's
// str.isspace and the Unicode \s class: Go's unicode.IsSpace plus the
// information separators U+001C..U+001F.
func isLNDLSpace(r rune) bool {
	if r < utf8.RuneSelf {
		switch r {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f:
			return true
		}
		return false
	}
	return unicode.IsSpace(r)
}

// trimLNDLSpace removes leading and trailing white space (isLNDLSpace), as
// Python's str.strip() does.
func trimLNDLSpace(s string) string {
	// Fast path: nothing to trim.
	if s == "" {
		return s
	}
	if c := s[0]; c < utf8.RuneSelf && !isLNDLSpace(rune(c)) {
		if d := s[len(s)-1]; d < utf8.RuneSelf && !isLNDLSpace(rune(d)) {
			return s
		}
	}
	return strings.TrimFunc(s, isLNDLSpace)
}

// sameName reports whether a == b, comparing the length and the first
// and last bytes first: the names, aliases and keys it compares are short
// and most pairs differ there, which saves a call to compare the text.
func sameName(a, b string) bool {
	return len(a) == len(b) && (a == "" || a[0] == b[0] && a[len(a)-1] == b[len(b)-1]) && a == b
}

// fieldsLNDLSpace splits s around runs of white space, as Python's
// str.split() with no arguments does.
func fieldsLNDLSpace(s string) []string {
	return strings.FieldsFunc(s, isLNDLSpace)
}

// isIdentStart reports whether r may start an identifier: a Unicode letter
// (Python str.isalpha) or '_'.
func isIdentStart(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')
	}
	return unicode.IsLetter(r)
}

// isIdentPart reports whether r may continue an identifier: a Unicode
// letter or number (Python str.isalnum) or '_'. This is also the \w class
// of the reference's regular expressions.
func isIdentPart(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// isDecimalDigit reports whether r is a digit in the sense of Python's
// str.isdigit, which the reference's lexer uses for numbers: a decimal
// digit (Unicode category Nd) or one of the other digits (superscripts,
// subscripts, circled digits, ...; see otherDigits). Only decimal digits
// have a value: a number literal holding another digit is invalid, as
// Python's int() and float() reject it.
func isDecimalDigit(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsDigit(r) || unicode.Is(otherDigits, r)
}

// otherDigits holds the characters of Unicode Numeric_Type=Digit, which
// Python's str.isdigit accepts besides the decimal digits.
var otherDigits = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x00b2, Hi: 0x00b3, Stride: 1},
		{Lo: 0x00b9, Hi: 0x00b9, Stride: 1},
		{Lo: 0x1369, Hi: 0x1371, Stride: 1},
		{Lo: 0x19da, Hi: 0x19da, Stride: 1},
		{Lo: 0x2070, Hi: 0x2070, Stride: 1},
		{Lo: 0x2074, Hi: 0x2079, Stride: 1},
		{Lo: 0x2080, Hi: 0x2089, Stride: 1},
		{Lo: 0x2460, Hi: 0x2468, Stride: 1},
		{Lo: 0x2474, Hi: 0x247c, Stride: 1},
		{Lo: 0x2488, Hi: 0x2490, Stride: 1},
		{Lo: 0x24ea, Hi: 0x24ea, Stride: 1},
		{Lo: 0x24f5, Hi: 0x24fd, Stride: 1},
		{Lo: 0x24ff, Hi: 0x24ff, Stride: 1},
		{Lo: 0x2776, Hi: 0x277e, Stride: 1},
		{Lo: 0x2780, Hi: 0x2788, Stride: 1},
		{Lo: 0x278a, Hi: 0x2792, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x10a40, Hi: 0x10a43, Stride: 1},
		{Lo: 0x1f100, Hi: 0x1f10a, Stride: 1},
	},
}

// decimalDigitValue returns the value 0..9 of a decimal digit, or -1. Every
// run of Nd characters in the Unicode tables starts at a zero, so the value
// is the offset in the run modulo 10.
func decimalDigitValue(r rune) int {
	if '0' <= r && r <= '9' {
		return int(r - '0')
	}
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			if rg.Stride != 1 {
				return -1
			}
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			if rg.Stride != 1 {
				return -1
			}
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// isLineBreak reports whether r ends a line for Python's str.splitlines:
// \n, \r, \v, \f, U+001C..U+001E, U+0085, U+2028 and U+2029 (\r\n counts as
// one break).
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// pyLines yields the lines of s the way Python's str.splitlines() makes
// them: line breaks per isLineBreak, "\r\n" as one break, breaks not
// kept, no empty last line for a trailing break.
func pyLines(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i < len(s); {
			r, size := rune(s[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[i:])
			}
			if !isLineBreak(r) {
				i += size
				continue
			}
			if !yield(s[start:i]) {
				return
			}
			i += size
			if r == '\r' && i < len(s) && s[i] == '\n' {
				i++
			}
			start = i
		}
		if start < len(s) {
			yield(s[start:])
		}
	}
}

// crlfToLF replaces every "\r\n" with "\n" (LNDL-D11); a lone '\r' stays.
func crlfToLF(s string) string {
	if strings.IndexByte(s, '\r') < 0 || !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}
