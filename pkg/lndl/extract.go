package lndl

import (
	"strings"
	"unicode/utf8"
)

// Extract returns the bodies of the ```lndl (or ~~~lndl) fenced blocks of
// text, in source order (docs/lndl.md#extraction).
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
	return extractInto(text, nil)
}

// extractInto is extractLF, appending the blocks to blocks.
func extractInto(text string, blocks []string) []string {
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

// fenceLine describes one line that begins with a fence: its kind ('`' or
// '~'), byte offsets and whether it can close a block.
type fenceLine struct {
	kind       byte
	start, end int // the line's start and the end of its text (before '\n')
	// closer is set when only spaces and tabs follow the fence.
	closer bool
}

// scanFences calls fn for every fenced block of text (any language), in
// order. text must already have "\r\n" converted.
//
// Closing candidates are collected in one pass; each opener then finds its
// closer with a cursor that only moves forward, so the scan is linear even
// with many unclosed openers.
func scanFences(text string, fn func(lang, body string)) {
	var buf [8]fenceLine
	lines := fenceLines(text, buf[:0])
	if len(lines) == 0 {
		return
	}
	// cursor[k] is the first line that may still close a fence of kind
	// k; it only moves forward.
	var cursor [2]int
	start := 0
	for _, l := range lines {
		if l.start < start {
			continue
		}
		if l.end == len(text) {
			// The last line has no newline: it cannot open a block.
			return
		}
		next := l.end + 1
		lang, ok := openerLang(text[l.start+3 : l.end])
		if !ok {
			continue
		}
		ki := kindIndex(l.kind)
		c := cursor[ki]
		for c < len(lines) && (lines[c].start < next || lines[c].kind != l.kind || !lines[c].closer) {
			c++
		}
		cursor[ki] = c
		if c == len(lines) {
			// No closer: this line opens nothing; later lines may.
			continue
		}
		closer := lines[c]
		fn(lang, text[next:closer.start])
		start = closer.end + 1
	}
}

// fenceLines appends to lines the lines of text that begin with three
// backticks or three tildes, in order. It looks only at the occurrences of the fences,
// skipping to the next line after each; the next occurrence of each kind
// is kept until passed, so the scan is linear.
func fenceLines(text string, lines []fenceLine) []fenceLine {
	// next[k] is the offset of the next occurrence of fence kind k at or
	// after pos, -1 when there is none, or -2 to look again.
	next := [2]int{-2, -2}
	fences := [2]string{"```", "~~~"}
	for pos := 0; pos < len(text); {
		i := -1
		for k := range next {
			if next[k] == -2 || next[k] >= 0 && next[k] < pos {
				if j := strings.Index(text[pos:], fences[k]); j >= 0 {
					next[k] = pos + j
				} else {
					next[k] = -1
				}
			}
			if next[k] >= 0 && (i < 0 || next[k] < i) {
				i = next[k]
			}
		}
		if i < 0 {
			break
		}
		end := len(text)
		if nl := strings.IndexByte(text[i:], '\n'); nl >= 0 {
			end = i + nl
		}
		if i == 0 || text[i-1] == '\n' {
			lines = append(lines, fenceLine{kind: text[i], start: i, end: end, closer: onlySpaceTab(text[i+3 : end])})
		}
		pos = end + 1
	}
	return lines
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
