package lndl

import (
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a lexer token. The names are the reference's and
// appear in ParseError reasons ("Expected GT, got ID").
type tokKind uint8

const (
	tokEOF tokKind = iota
	tokLvarOpen
	tokLvarClose
	tokLactOpen
	tokLactClose
	tokOutOpen
	tokOutClose
	tokID
	tokNum
	tokStr
	tokDot
	tokComma
	tokColon
	tokLBracket
	tokRBracket
	tokLParen
	tokRParen
	tokGT
	tokNewline
	// tokBody is the raw body after the '>' that ends an <lvar or <lact
	// head (LNDL-D5).
	tokBody
)

var tokNames = [...]string{
	tokEOF:       "EOF",
	tokLvarOpen:  "LVAR_OPEN",
	tokLvarClose: "LVAR_CLOSE",
	tokLactOpen:  "LACT_OPEN",
	tokLactClose: "LACT_CLOSE",
	tokOutOpen:   "OUT_OPEN",
	tokOutClose:  "OUT_CLOSE",
	tokID:        "ID",
	tokNum:       "NUM",
	tokStr:       "STR",
	tokDot:       "DOT",
	tokComma:     "COMMA",
	tokColon:     "COLON",
	tokLBracket:  "LBRACKET",
	tokRBracket:  "RBRACKET",
	tokLParen:    "LPAREN",
	tokRParen:    "RPAREN",
	tokGT:        "GT",
	tokNewline:   "NEWLINE",
	tokBody:      "BODY",
}

func (k tokKind) String() string {
	if int(k) < len(tokNames) {
		return tokNames[k]
	}
	return "UNKNOWN"
}

// token is one lexed token. text is the identifier, the number literal as
// written, the decoded string, or the raw body; off is the byte offset of
// its first character (the parser turns offsets into lines and columns
// only where it needs them).
type token struct {
	kind tokKind
	text string
	off  int
	// closed is set on a tokBody that ends at a closing tag; false when the
	// body runs to the end of the input.
	closed bool
}

const (
	lvarOpenText  = "<lvar"
	lactOpenText  = "<lact"
	lvarCloseText = "</lvar>"
	lactCloseText = "</lact>"
)

// lexer turns LNDL text into tokens on demand (docs/lndl.md#lexing). It is a
// small state machine: OUT mode (entered at the OUT opener, left at '}')
// enables strings and negative numbers; after an <lvar/<lact opening tag
// the first '>' ends the head and the next token is the raw body up to the
// closing tag of the same kind. Tokens carry byte offsets; see position
// for lines and columns.
type lexer struct {
	src string
	off int

	inOut bool
	// head is tokLvarOpen or tokLactOpen while a tag head is open, else
	// tokEOF.
	head tokKind
	// body is set when the next token is the body of the head just ended;
	// bodyKind says which closer ends it.
	body     bool
	bodyKind tokKind
}

func newLexer(src string) lexer {
	return lexer{src: src}
}

// set fills t in place (tokens are large; returning them by value costs a
// copy per token).
func (l *lexer) set(t *token, kind tokKind, text string, start int) {
	t.kind = kind
	t.text = text
	t.off = start
	t.closed = false
}

// next reads the next token into t; at the end it yields tokEOF forever.
func (l *lexer) next(t *token) {
	if l.body {
		l.lexBody(t)
		return
	}
	s := l.src
	for l.off < len(s) {
		c := s[l.off]
		if c == ' ' || c == '\t' || c == '\r' {
			i := l.off + 1
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
				i++
			}
			l.off = i
			continue
		}
		p := l.off
		switch c {
		case '\n':
			l.off++
			l.set(t, tokNewline, "\n", p)
			return
		case '<':
			rest := s[l.off:]
			switch {
			case strings.HasPrefix(rest, lvarCloseText):
				l.off += len(lvarCloseText)
				l.set(t, tokLvarClose, lvarCloseText, p)
				return
			case strings.HasPrefix(rest, lactCloseText):
				l.off += len(lactCloseText)
				l.set(t, tokLactClose, lactCloseText, p)
				return
			case strings.HasPrefix(rest, lvarOpenText):
				l.off += len(lvarOpenText)
				l.head = tokLvarOpen
				l.set(t, tokLvarOpen, lvarOpenText, p)
				return
			case strings.HasPrefix(rest, lactOpenText):
				l.off += len(lactOpenText)
				l.head = tokLactOpen
				l.set(t, tokLactOpen, lactOpenText, p)
				return
			}
			l.off += 1
			continue
		case 'O':
			if n := outOpenerLen(s[l.off:]); n > 0 {
				l.off += n
				l.inOut = true
				l.set(t, tokOutOpen, s[p:l.off], p)
				return
			}
		case '-':
			if l.inOut {
				if r, _ := decodeAt(s, l.off+1); isDecimalDigit(r) {
					l.off += 1
					l.lexNumber(t, p)
					return
				}
			}
			l.off += 1
			continue
		case '"', '\'':
			if l.inOut {
				l.lexString(t, p)
				return
			}
			l.off += 1
			continue
		case '.':
			l.off += 1
			l.set(t, tokDot, ".", p)
			return
		case ',':
			l.off += 1
			l.set(t, tokComma, ",", p)
			return
		case ':':
			l.off += 1
			l.set(t, tokColon, ":", p)
			return
		case '[':
			l.off += 1
			l.set(t, tokLBracket, "[", p)
			return
		case ']':
			l.off += 1
			l.set(t, tokRBracket, "]", p)
			return
		case '(':
			l.off += 1
			l.set(t, tokLParen, "(", p)
			return
		case ')':
			l.off += 1
			l.set(t, tokRParen, ")", p)
			return
		case '}':
			l.off += 1
			l.inOut = false
			l.set(t, tokOutClose, "}", p)
			return
		case '>':
			l.off += 1
			if l.head != tokEOF {
				l.body = true
				l.bodyKind = l.head
				l.head = tokEOF
			}
			l.set(t, tokGT, ">", p)
			return
		}
		r, size := decodeAt(s, l.off)
		switch {
		case isIdentStart(r):
			l.lexIdent(t, p)
			return
		case isDecimalDigit(r):
			l.lexNumber(t, p)
			return
		}
		// Any other character starts no token and is skipped.
		l.off += size
	}
	l.set(t, tokEOF, "", l.off)
}

// decodeAt decodes the rune at s[i:], or returns utf8.RuneError for the
// end of s.
func decodeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return utf8.RuneError, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// outOpenerLen returns the length of the OUT opener at the start of s
// ("OUT", spaces or tabs, "{"; LNDL-D1), or 0.
func outOpenerLen(s string) int {
	if !strings.HasPrefix(s, "OUT") {
		return 0
	}
	i := 3
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && s[i] == '{' {
		return i + 1
	}
	return 0
}

func (l *lexer) lexIdent(t *token, p int) {
	s := l.src
	i := l.off
	n := 0
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if !asciiIdentPart[c] {
				break
			}
			i++
			n++
			continue
		}
		r, size := decodeAt(s, i)
		if !isIdentPart(r) {
			break
		}
		i += size
		n++
	}
	l.off = i
	l.set(t, tokID, s[p:i], p)
}

// asciiIdentPart marks the ASCII characters that continue an identifier.
var asciiIdentPart = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = isIdentPart(rune(c))
	}
	return t
}()

// digitsRun returns the end of the run of decimal digits at i and how many
// characters it holds.
func digitsRun(s string, i int) (int, int) {
	n := 0
	for i < len(s) {
		r, size := decodeAt(s, i)
		if !isDecimalDigit(r) {
			break
		}
		i += size
		n++
	}
	return i, n
}

// lexNumber reads digits and dots, then an exponent when a digit follows
// the 'e' or its sign. p is the token start (a '-' may precede l.off).
func (l *lexer) lexNumber(t *token, p int) {
	s := l.src
	i := l.off
	n := 0
	for i < len(s) {
		if s[i] == '.' {
			i++
			n++
			continue
		}
		r, size := decodeAt(s, i)
		if !isDecimalDigit(r) {
			break
		}
		i += size
		n++
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if end, k := digitsRun(s, j); k > 0 {
			n += (j - i) + k
			i = end
		}
	}
	l.off = i
	l.set(t, tokNum, s[p:i], p)
}

// lexString reads a quoted string in OUT mode: up to the same quote, with
// \n, \t and \r escapes and any other escaped character standing for
// itself; unterminated, it runs to the end.
func (l *lexer) lexString(t *token, p int) {
	s := l.src
	quote := s[l.off]
	start := l.off + 1
	i := start
	// Fast path: no backslash before the closing quote.
	for i < len(s) && s[i] != quote && s[i] != '\\' {
		i++
	}
	if i >= len(s) || s[i] == quote {
		text := s[start:i]
		end := i
		if i < len(s) {
			end++
		}
		l.off = end
		l.set(t, tokStr, text, p)
		return
	}
	var b strings.Builder
	b.WriteString(s[start:i])
	for i < len(s) && s[i] != quote {
		if s[i] != '\\' {
			j := i + 1
			for j < len(s) && s[j] != quote && s[j] != '\\' {
				j++
			}
			b.WriteString(s[i:j])
			i = j
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
			i++
		case 't':
			b.WriteByte('\t')
			i++
		case 'r':
			b.WriteByte('\r')
			i++
		default:
			_, size := decodeAt(s, i)
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	if i < len(s) {
		i++
	}
	l.off = i
	l.set(t, tokStr, b.String(), p)
}

// lexBody returns the raw text from the end of a tag head to the next
// closing tag of its kind, or to the end (LNDL-D5).
func (l *lexer) lexBody(t *token) {
	l.body = false
	closer := lvarCloseText
	if l.bodyKind == tokLactOpen {
		closer = lactCloseText
	}
	p := l.off
	rest := l.src[l.off:]
	if k := strings.Index(rest, closer); k >= 0 {
		l.off += k
		*t = token{kind: tokBody, text: rest[:k], off: p, closed: true}
		return
	}
	l.off = len(l.src)
	*t = token{kind: tokBody, text: rest, off: p}
}

// position advances from, the position of an earlier offset, to offset off
// (off >= from.Offset) and returns it. Lines count from 1; columns count
// characters, from 1 on the first line and from 0 on later lines (the
// reference's convention).
func position(src string, from Pos, off int) Pos {
	seg := src[from.Offset:off]
	p := Pos{Offset: off, Line: from.Line, Column: from.Column}
	if seg != "" && seg[len(seg)-1] == '\n' {
		// The usual case for a tag: it starts a line.
		p.Line += strings.Count(seg, "\n")
		p.Column = 0
		return p
	}
	if strings.IndexByte(seg, '\n') < 0 {
		p.Column += utf8.RuneCountInString(seg)
		return p
	}
	p.Line += strings.Count(seg, "\n")
	p.Column = utf8.RuneCountInString(seg[strings.LastIndexByte(seg, '\n')+1:])
	return p
}

// startPos is the position of offset 0.
var startPos = Pos{Offset: 0, Line: 1, Column: 1}
