package lndl

import (
	"strings"
	"unicode/utf8"
)

// Extract returns the bodies of the ```lndl (or ~~~lndl) fenced blocks of
// text, in source order (LNDL.md section 1).
//
// Every "\r\n" becomes "\n" first; a lone '\r' stays (LNDL-D11). A fence
// opener is a whole line starting in column 0: three backticks or three
// tildes, optional spaces/tabs, a language word (a possibly empty run of
// Unicode letters, digits, '_', '+' and '-'), optional spaces/tabs and a
// newline. The block ends at the first later line that is the same fence in
// column 0 followed only by spaces/tabs; an opener with no such line opens
// nothing. Blocks of every language are consumed whole, left to right, so a
// fence line inside one is content. A body runs from after the opener's
// newline to the closing line and keeps its final newline; an empty block
// is "". Only blocks whose language word is "lndl", ignoring case, are
// returned.
//
// Extract runs in time linear in len(text).
func Extract(text string) []string {
	return extractLF(crlfToLF(text))
}

// extractLF is Extract on text whose "\r\n" pairs are already converted;
// converting once only matters for "\r\r\n", which stays "\r\n".
func extractLF(text string) []string {
	var blocks []string
	scanFences(text, func(lang, body string) {
		if isLNDLLang(lang) {
			blocks = append(blocks, body)
		}
	})
	return blocks
}

// isLNDLLang reports whether a fence's language word is "lndl" ignoring
// case. No non-ASCII character lower-cases to one of its letters.
func isLNDLLang(lang string) bool {
	return len(lang) == 4 && strings.EqualFold(lang, "lndl")
}

// fenceLine describes one line that can close a fence: its kind ('`' or
// '~') and byte offsets.
type fenceLine struct {
	kind       byte
	start, end int // the line's start and the end of its text (before '\n')
}

// scanFences calls fn for every fenced block of text (any language), in
// order. text must already have "\r\n" converted.
//
// Closing candidates are collected in one pass; each opener then finds its
// closer with a cursor that only moves forward, so the scan is linear even
// with many unclosed openers.
func scanFences(text string, fn func(lang, body string)) {
	if !strings.Contains(text, "```") && !strings.Contains(text, "~~~") {
		return
	}
	var closers [2][]fenceLine // by kind: 0 backtick, 1 tilde
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		if k, ok := fenceKind(text, start); ok && onlySpaceTab(text[start+3:end]) {
			closers[kindIndex(k)] = append(closers[kindIndex(k)], fenceLine{kind: k, start: start, end: end})
		}
		start = end + 1
	}
	var cursor [2]int
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			// The last line has no newline: it cannot open a block.
			return
		}
		end += start
		next := end + 1
		k, ok := fenceKind(text, start)
		if !ok {
			start = next
			continue
		}
		lang, ok := openerLang(text[start+3 : end])
		if !ok {
			start = next
			continue
		}
		ki := kindIndex(k)
		list := closers[ki]
		c := cursor[ki]
		for c < len(list) && list[c].start < next {
			c++
		}
		cursor[ki] = c
		if c == len(list) {
			// No closer: this line opens nothing; later lines may.
			start = next
			continue
		}
		closer := list[c]
		fn(lang, text[next:closer.start])
		start = closer.end + 1
	}
}

// fenceKind reports whether the line at start begins with three backticks
// or three tildes, and which.
func fenceKind(text string, start int) (byte, bool) {
	if start+3 > len(text) {
		return 0, false
	}
	c := text[start]
	if (c != '`' && c != '~') || text[start+1] != c || text[start+2] != c {
		return 0, false
	}
	return c, true
}

func kindIndex(k byte) int {
	if k == '`' {
		return 0
	}
	return 1
}

func onlySpaceTab(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

// openerLang parses the rest of an opener line after the fence: optional
// spaces/tabs, a language word, optional spaces/tabs, nothing else.
func openerLang(rest string) (string, bool) {
	i := 0
	for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t') {
		i++
	}
	langStart := i
	for i < len(rest) {
		c := rest[i]
		if c < utf8.RuneSelf {
			if c == '+' || c == '-' || isIdentPart(rune(c)) {
				i++
				continue
			}
			break
		}
		r, size := utf8.DecodeRuneInString(rest[i:])
		if !isIdentPart(r) {
			break
		}
		i += size
	}
	lang := rest[langStart:i]
	if !onlySpaceTab(rest[i:]) {
		return "", false
	}
	return lang, true
}
