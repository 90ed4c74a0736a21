package lndl

import (
	"strings"
	"unicode/utf8"
)

// Normalize applies the conservative repairs of docs/lndl.md#normalization to a raw
// model response and returns the text to lex:
//
//  1. every "\r\n" becomes "\n" (LNDL-D11), once: "\r\r\n" becomes
//     "\r\n";
//  2. if the text has lndl fenced blocks (see [Extract], without converting
//     again), only those are kept, joined with "\n\n";
//  3. then the repairs of [NormalizeBlock].
//
// Normalize runs in time linear in len(text).
func Normalize(text string) string {
	if text == "" {
		return text
	}
	text = crlfToLF(text)
	if blocks := extractLF(text); len(blocks) > 0 {
		text = strings.Join(blocks, "\n\n")
	}
	return repairTags(text)
}

// NormalizeBlock applies the repairs of [Normalize] without extracting
// fenced blocks: a round has already extracted and joined its blocks, and a
// fence inside a block is content (LNDL-D10). It does not convert "\r\n"
// either: its input comes from [Extract], which already did. The repairs:
//
//   - a <lact tag missing its '>' is repaired: `<lact`, white space, one or
//     two names (an ASCII letter or '_', then word characters or '.'),
//     white space, a body holding a '(' and no '<' or '>', then `</lact>`
//     becomes `<lact NAMES>BODY</lact>` with the body trimmed. An <lvar is
//     never repaired;
//   - curly tags: `{lvar`/`{lact`, white space, text up to the next '}'
//     become `<lvar …>`/`<lact …>`, and `{/lvar}`/`{/lact}` closing tags;
//   - in every `<lvar`/`<lact` + white space + text up to the next '>',
//     attributes `word="value"` (either quote kind) are dropped, the other
//     words re-joined with single spaces, and the value of a `name`
//     attribute is put first unless it equals one of them (LNDL-D14);
//   - `<lvar Note.`/`<lact Note.` becomes `<lvar note.`/`<lact note.`.
//
// NormalizeBlock runs in time linear in len(text).
func NormalizeBlock(text string) string {
	if text == "" {
		return text
	}
	return repairTags(text)
}

func repairTags(text string) string {
	text, _ = repairTagsCounting(text)
	return text
}

// declCount is the number of <lvar and <lact tags normalization saw in a
// text, which the parser sizes its declaration slices from; known is false
// when it did not count them all.
type declCount struct {
	lvars, lacts int
	known        bool
}

// repairTagsCounting is repairTags, also returning the tags it counted
// while checking whether a repair applies.
func repairTagsCounting(text string) (string, declCount) {
	need, count := needsRepair(text)
	if !need {
		return text, count
	}
	text = fixMissingGT(text)
	text = curlyOpenTags(text)
	text = curlyCloseTags(text)
	text = cleanTagHeads(text)
	text = lowerNoteHeads(text)
	return text, declCount{}
}

// needsRepair reports whether any repair of repairTags could change text,
// and counts the <lvar and <lact tags of a text that needs none. It is
// false for most text, which then takes one scan instead of one per
// repair. The curly and note repairs are assumed needed when their
// trigger is present. The others are looked for at every '<': a
// missing-'>' lact, or a tag head that cleaning changes. The heads checked
// are those cleanTagHeads looks at: it skips the inside of a head, so the
// heads of tags there are not checked (which would take time quadratic
// in the text when many tags share one '>').
func needsRepair(text string) (bool, declCount) {
	if hasCurlyTag(text) || strings.Contains(text, "Note.") {
		return true, declCount{}
	}
	count := declCount{known: true}
	// heads is the offset where the next head cleanTagHeads looks at may
	// start: past the '>' of the last one.
	heads := 0
	for pos := 0; pos < len(text); {
		k := strings.IndexByte(text[pos:], '<')
		if k < 0 {
			return false, count
		}
		i := pos + k
		pos = i + 1
		if pos >= len(text) || text[pos] != 'l' {
			continue
		}
		tag, ok := tagAt(text, i, "<")
		if !ok {
			continue
		}
		after := i + 1 + len(tag)
		if end, ok := cleanHeadEnd(text, after); ok {
			// The usual clean head: no repair applies at this tag, and
			// no '<' is skipped.
			if tag == "lact" {
				count.lacts++
			} else {
				count.lvars++
			}
			pos = end
			continue
		}
		if tag == "lact" {
			count.lacts++
			if _, _, _, _, ok := matchMissingGT(text, after); ok {
				return true, declCount{}
			}
		} else {
			count.lvars++
		}
		if i < heads {
			continue
		}
		headStart := spaceRun(text, after)
		if headStart == after {
			continue
		}
		gt := strings.IndexByte(text[headStart:], '>')
		if gt < 0 {
			// No '>' here means none for any later tag, and a
			// missing-'>' repair needs the '>' of its "</lact>"; no
			// later tag can start a declaration either.
			return false, count
		}
		gt += headStart
		if !headKept(text[after:gt], cleanHead(text[headStart:gt])) {
			return true, declCount{}
		}
		heads = gt + 1
	}
	return false, count
}

// cleanHeadEnd recognises, in one scan, the usual tag head at after (just
// past "<lvar" or "<lact"): a space, then words of bytes that are neither
// white space, '=', '<' nor non-ASCII, separated by single spaces, then
// '>'. It returns the offset after the '>'. Cleaning leaves such a head
// as it is (it has no attribute, and its words are already joined by
// single spaces), and a missing-'>' lact repair cannot start there: its
// names would be followed by this '>' before any "</lact>".
func cleanHeadEnd(text string, after int) (int, bool) {
	if after+1 >= len(text) || text[after] != ' ' || text[after+1] == ' ' {
		return 0, false
	}
	for k := after + 1; k < len(text); k++ {
		switch c := text[k]; {
		case c == '>':
			return k + 1, text[k-1] != ' '
		case c == ' ':
			if text[k-1] == ' ' {
				return 0, false
			}
		case c == '<' || headByteClass[c] != headByteWord:
			return 0, false
		}
	}
	return 0, false
}

// hasCurlyTag reports whether text holds "{l" or "{/l", in one scan.
func hasCurlyTag(text string) bool {
	for i := 0; ; {
		k := strings.IndexByte(text[i:], '{')
		if k < 0 {
			return false
		}
		i += k + 1
		if rest := text[i:]; strings.HasPrefix(rest, "l") || strings.HasPrefix(rest, "/l") {
			return true
		}
	}
}

// spaceRun returns the end of the run of white space starting at i.
func spaceRun(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if !isLNDLSpace(rune(c)) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isLNDLSpace(r) {
			return i
		}
		i += size
	}
	return i
}

// repairName returns the end of a missing-'>' repair name at i (an ASCII
// letter or '_', then word characters or '.'), or -1.
func repairName(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	c := s[i]
	if c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') {
		return -1
	}
	i++
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '.' || isIdentPart(rune(c)) {
				i++
				continue
			}
			return i
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isIdentPart(r) {
			return i
		}
		i += size
	}
	return i
}

// repairBody checks the body of a missing-'>' repair starting at i: up to
// the first '<' or '>' there must be a '(' and the '<' must open
// "</lact>". It returns the body's end, or -1.
func repairBody(s string, i int) int {
	j := strings.IndexAny(s[i:], "<>")
	if j < 0 {
		return -1
	}
	j += i
	if !strings.HasPrefix(s[j:], "</lact>") {
		return -1
	}
	if strings.IndexByte(s[i:j], '(') < 0 {
		return -1
	}
	return j
}

// fixMissingGT repairs `<lact NAMES BODY</lact>` (LNDL-D10: lact only).
func fixMissingGT(text string) string {
	const open = "<lact"
	if !strings.Contains(text, open) {
		return text
	}
	var b strings.Builder
	copied := 0
	for pos := 0; pos < len(text); {
		k := strings.Index(text[pos:], open)
		if k < 0 {
			break
		}
		i := pos + k
		headStart, headEnd, bodyStart, bodyEnd, ok := matchMissingGT(text, i+len(open))
		if !ok {
			pos = i + 1
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(text) + 16)
		}
		b.WriteString(text[copied:i])
		b.WriteString("<lact ")
		b.WriteString(trimLNDLSpace(text[headStart:headEnd]))
		b.WriteByte('>')
		b.WriteString(trimLNDLSpace(text[bodyStart:bodyEnd]))
		b.WriteString("</lact>")
		copied = bodyEnd + len("</lact>")
		pos = copied
	}
	if copied == 0 {
		return text
	}
	b.WriteString(text[copied:])
	return b.String()
}

// matchMissingGT matches the part of a missing-'>' repair after "<lact":
// white space, one or two names (two when the rest still matches),
// white space and the body.
func matchMissingGT(s string, i int) (headStart, headEnd, bodyStart, bodyEnd int, ok bool) {
	headStart = spaceRun(s, i)
	if headStart == i {
		return 0, 0, 0, 0, false
	}
	n1 := repairName(s, headStart)
	if n1 < 0 {
		return 0, 0, 0, 0, false
	}
	// Two names.
	if w := spaceRun(s, n1); w > n1 {
		if n2 := repairName(s, w); n2 >= 0 {
			if bs := spaceRun(s, n2); bs > n2 {
				if be := repairBody(s, bs); be >= 0 {
					return headStart, n2, bs, be, true
				}
			}
		}
	}
	// One name.
	bs := spaceRun(s, n1)
	if bs == n1 {
		return 0, 0, 0, 0, false
	}
	be := repairBody(s, bs)
	if be < 0 {
		return 0, 0, 0, 0, false
	}
	return headStart, n1, bs, be, true
}

// tagAt reports whether s[i:] starts with prefix+"lvar" or prefix+"lact",
// returning the tag name.
func tagAt(s string, i int, prefix string) (string, bool) {
	if !strings.HasPrefix(s[i:], prefix) {
		return "", false
	}
	j := i + len(prefix)
	if strings.HasPrefix(s[j:], "lvar") {
		return "lvar", true
	}
	if strings.HasPrefix(s[j:], "lact") {
		return "lact", true
	}
	return "", false
}

// curlyOpenTags rewrites `{lvar WS…}` to `<lvar WS…>` (and lact).
func curlyOpenTags(text string) string {
	if !strings.Contains(text, "{l") {
		return text
	}
	var b strings.Builder
	copied := 0
	noCloser := false
	for pos := 0; pos < len(text) && !noCloser; {
		k := strings.Index(text[pos:], "{l")
		if k < 0 {
			break
		}
		i := pos + k
		pos = i + 1
		tag, ok := tagAt(text, i, "{")
		if !ok {
			continue
		}
		after := i + 1 + len(tag)
		if spaceRun(text, after) == after {
			continue
		}
		c := strings.IndexByte(text[after:], '}')
		if c < 0 {
			// No '}' here means none for any later tag either.
			noCloser = true
			break
		}
		c += after
		b.WriteString(text[copied:i])
		b.WriteByte('<')
		b.WriteString(tag)
		b.WriteString(text[after:c])
		b.WriteByte('>')
		copied = c + 1
		pos = copied
	}
	if copied == 0 {
		return text
	}
	b.WriteString(text[copied:])
	return b.String()
}

// curlyCloseTags rewrites `{/lvar}` and `{/lact}` to closing tags.
func curlyCloseTags(text string) string {
	if !strings.Contains(text, "{/l") {
		return text
	}
	text = strings.ReplaceAll(text, "{/lvar}", "</lvar>")
	return strings.ReplaceAll(text, "{/lact}", "</lact>")
}

// nextTagHead finds the first `<lvar` or `<lact` at or after pos that is
// followed by white space: its offset i, its name, the end of the name
// (after) and where the head starts past the white space. ok is false when
// there is none.
func nextTagHead(text string, pos int) (i int, tag string, after, headStart int, ok bool) {
	for pos < len(text) {
		// The next "<l": bodies hold closing tags, so most '<' are
		// followed by '/', and one IndexByte per '<' beats strings.Index.
		k := strings.IndexByte(text[pos:], '<')
		if k < 0 {
			break
		}
		i = pos + k
		pos = i + 1
		if pos >= len(text) || text[pos] != 'l' {
			continue
		}
		if tag, ok = tagAt(text, i, "<"); !ok {
			continue
		}
		after = i + 1 + len(tag)
		if headStart = spaceRun(text, after); headStart > after {
			return i, tag, after, headStart, true
		}
	}
	return 0, "", 0, 0, false
}

// cleanTagHeads rewrites every `<lvar WS HEAD>` and `<lact WS HEAD>`: XML
// attributes dropped, words re-joined, a name attribute promoted first.
func cleanTagHeads(text string) string {
	if !strings.Contains(text, "<l") {
		return text
	}
	var b strings.Builder
	copied := 0
	for pos := 0; ; {
		i, tag, after, headStart, ok := nextTagHead(text, pos)
		if !ok {
			break
		}
		gt := strings.IndexByte(text[headStart:], '>')
		if gt < 0 {
			// No '>' here means none for any later tag either.
			break
		}
		gt += headStart
		head := cleanHead(text[headStart:gt])
		if headKept(text[after:gt], head) {
			pos = gt + 1
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(text))
		}
		b.WriteString(text[copied:i])
		b.WriteByte('<')
		b.WriteString(tag)
		if head != "" {
			b.WriteByte(' ')
			b.WriteString(head)
		}
		b.WriteByte('>')
		copied = gt + 1
		pos = copied
	}
	if copied == 0 {
		return text
	}
	b.WriteString(text[copied:])
	return b.String()
}

// headKept reports whether cleaning leaves a tag head as it is: raw is
// the text between the tag name and its '>', head what cleanHead makes of
// raw past its leading white space. cleanTagHeads puts a space and head
// in place of raw, or nothing when head is empty.
func headKept(raw, head string) bool {
	return head != "" && len(raw) == 1+len(head) && raw[0] == ' ' && raw[1:] == head
}

// Classes of the bytes of a tag head for cleanHeadEnd.
const (
	headByteWord  = iota // may appear in a word of a clean head
	headByteSpace        // ' ': a single separator
	headByteOther        // '=', other white space, any non-ASCII byte
)

// headByteClass classifies every byte value for cleanHeadEnd.
var headByteClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c == '=' || c >= utf8.RuneSelf:
			t[c] = headByteOther
		case c == ' ':
			t[c] = headByteSpace
		case isLNDLSpace(rune(c)):
			t[c] = headByteOther
		}
	}
	return t
}()

// cleanHead drops `word="value"` attributes from a tag head, re-joins the
// remaining words with single spaces and puts the value of the last name
// attribute first unless it equals one of the words (LNDL-D14).
func cleanHead(head string) string {
	var rest strings.Builder
	name := ""
	copied := 0
	prevWord := false
	for i := 0; i < len(head); {
		r, size := rune(head[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(head[i:])
		}
		word := isIdentPart(r)
		if !word || prevWord {
			prevWord = word
			i += size
			continue
		}
		// A word starts at i.
		end := i
		for end < len(head) {
			r2, s2 := rune(head[end]), 1
			if r2 >= utf8.RuneSelf {
				r2, s2 = utf8.DecodeRuneInString(head[end:])
			}
			if !isIdentPart(r2) {
				break
			}
			end += s2
		}
		if end+1 < len(head) && head[end] == '=' && (head[end+1] == '"' || head[end+1] == '\'') {
			vs := end + 2
			if q := strings.IndexAny(head[vs:], `"'`); q >= 0 {
				ve := vs + q
				if head[i:end] == "name" {
					name = head[vs:ve]
				}
				rest.WriteString(head[copied:i])
				copied = ve + 1
				i = ve + 1
				prevWord = false
				continue
			}
		}
		prevWord = true
		i = end
	}
	var words []string
	if copied == 0 {
		words = fieldsLNDLSpace(head)
	} else {
		rest.WriteString(head[copied:])
		words = fieldsLNDLSpace(rest.String())
	}
	if name != "" {
		dup := false
		for _, w := range words {
			if w == name {
				dup = true
				break
			}
		}
		if !dup {
			words = append([]string{name}, words...)
		}
	}
	return strings.Join(words, " ")
}

// lowerNoteHeads rewrites `<lvar WS Note.` to `<lvar note.` (and lact).
func lowerNoteHeads(text string) string {
	if !strings.Contains(text, "Note.") {
		return text
	}
	var b strings.Builder
	copied := 0
	for pos := 0; ; {
		i, tag, _, ns, ok := nextTagHead(text, pos)
		if !ok {
			break
		}
		pos = i + 1
		if !strings.HasPrefix(text[ns:], "Note.") {
			continue
		}
		b.WriteString(text[copied:i])
		b.WriteByte('<')
		b.WriteString(tag)
		b.WriteString(" note.")
		copied = ns + len("Note.")
		pos = copied
	}
	if copied == 0 {
		return text
	}
	b.WriteString(text[copied:])
	return b.String()
}
