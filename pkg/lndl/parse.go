package lndl

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Bounds of the parser. Each is enforced with a *ParseError.
const (
	// MaxInputBytes is the largest text Parse accepts (1 MiB). A round
	// should apply it to the raw response before extracting blocks.
	MaxInputBytes = 1 << 20
	// MaxDepth is the deepest nesting of brackets in an OUT block.
	MaxDepth = 32
	// MaxDeclarations is the largest number of <lvar> and <lact>
	// declarations in one text.
	MaxDeclarations = 10000
	// MaxOutEntries is the largest number of entries in an OUT block.
	MaxOutEntries = 10000
	// MaxIntDigits is the most digits an integer literal may have.
	MaxIntDigits = 4300
)

// Parse lexes and parses LNDL text (already normalized, see [Normalize])
// into a [Program] (docs/lndl.md#lexing and #parsing). The text is used as given:
// no extraction, no normalization, no "\r\n" conversion ('\r' is plain
// white space).
//
// Only <lvar>, <lact> and the OUT opener are significant at the top level;
// parsing stops after the first OUT block. Every error is a *ParseError
// whose position follows the reference's convention (lines from 1, columns
// from 1 on the first line and from 0 on later lines). Reasons include
// "Expected GT, got DOT", "Unclosed lvar tag - missing </lvar>",
// "Duplicate alias 'a' - aliases must be unique across lvars and lacts",
// "Invalid number literal '1.2.3'" and "OUT block nesting too deep -
// exceeded max depth of 32".
//
// OUT entries are kept as written ([Out.Entries]); [Out.Fields] merges
// them. A number's Value.Text is its canonical JSON text: an integer
// exactly, without leading zeros ("007" → "7", "-0" → "0"), a float in
// Python's repr form ("1." → "1.0", "1e10" → "10000000000.0", "6E23" →
// "6e+23", "1e-400" → "0.0").
//
// Bounds: the text may hold at most [MaxInputBytes] bytes and
// [MaxDeclarations] declarations, an OUT block at most [MaxOutEntries]
// entries nested at most [MaxDepth] brackets deep, an integer literal at
// most [MaxIntDigits] digits; float literals must be finite. Parse runs in
// time linear in len(text).
func Parse(text string) (*Program, error) {
	return parseWith(text, declCount{}, nil)
}

// parseWith is Parse; count, when known, sizes the declaration slices,
// and with sc the program is made in sc's storage.
func parseWith(text string, count declCount, sc *parseScratch) (*Program, error) {
	if len(text) > MaxInputBytes {
		return nil, &ParseError{Line: 1, Column: 1, Reason: fmt.Sprintf(
			"Input too large - %d bytes exceeds the limit of %d", len(text), MaxInputBytes)}
	}
	p := &parser{lx: newLexer(text), cur: startPos, listStart: -1, count: count, sc: sc}
	return p.run()
}

// run parses the whole text with a list stack from the pool. Finished
// lists are copied out of the stack, so it is scratch space, pooled when
// small; it is not cleared (every item is written before it is read), and
// what it holds is kept no longer than the pool keeps it.
func (p *parser) run() (*Program, error) {
	sp := valueStackPool.Get().(*[]Value)
	p.stack = (*sp)[:0]
	p.advance()
	prog, err := p.parseProgram()
	if cap(p.stack) <= maxPooledStack {
		*sp = p.stack[:0]
		valueStackPool.Put(sp)
	}
	return prog, err
}

// valueStackPool holds the parsers' list stacks for reuse.
var valueStackPool = sync.Pool{New: func() any { return new([]Value) }}

// maxPooledStack bounds the items of a pooled list stack (56 KB).
const maxPooledStack = 1024

type parser struct {
	lx  lexer
	tok token
	// cur is the last position computed; positions are asked for in
	// increasing offset order, so computing them costs one pass in all.
	cur Pos
	// stack holds the items of the lists being parsed, innermost last;
	// a finished list is copied out of it into arena.
	stack []Value
	// arena is the block finished lists are carved from, so that a
	// program's lists take a few allocations in all.
	arena []Value
	// listStart is the offset of the first list's '[', -1 before it.
	listStart int
	// count is the number of declaration tags normalization counted.
	count declCount
	// sc, when set, is the storage to make the program in.
	sc *parseScratch
}

// makeEntries returns an empty entry slice with room for n.
func (p *parser) makeEntries(n int) []OutEntry {
	if p.sc != nil {
		return makeRoom(p.sc.entries, n)
	}
	return make([]OutEntry, 0, n)
}

// newOut returns an empty OUT block at byte offset off.
func (p *parser) newOut(off int) *Out {
	if p.sc != nil {
		p.sc.out = Out{Offset: off}
		return &p.sc.out
	}
	return &Out{Offset: off}
}

// declRoom returns the room to make for the lvars and the lacts of src.
// The tags normalization counted give it exactly (up to tags inside
// bodies); without them, every declaration has an opening and a closing
// tag, each starting with '<', so half their number (counted in one fast
// pass) is rarely short for the lvars, and a few lacts are usual. Both are
// within MaxDeclarations; append grows a slice that is short.
func (p *parser) declRoom() (lvars, lacts int) {
	if p.count.known {
		return min(p.count.lvars, MaxDeclarations), min(p.count.lacts, MaxDeclarations)
	}
	return min(strings.Count(p.lx.src, "<")/2+1, MaxDeclarations), 4
}

// Blocks of the list arena: the first holds at least arenaMin items,
// each next one twice as many as the last, up to arenaMax.
const (
	arenaMin = 4
	arenaMax = 1024
)

// finishList returns the items from stack[start:] as a list of their
// own, with no room to grow into a neighbour, and pops them.
func (p *parser) finishList(start int) []Value {
	items := p.stack[start:]
	n := len(items)
	if n > cap(p.arena)-len(p.arena) || p.arena == nil {
		// The first block is sized from the text left after the first
		// list's start, counted in fast passes: the items of a list are
		// its commas plus one, and the commas between entries are about
		// as many as the keys' colons, so the items are about the commas
		// and the later lists' '[' less the colons, plus one; at least
		// one per ']'. A short block is followed by one twice as large.
		rest := p.lx.src[p.listStart:]
		lists := strings.Count(rest, "]")
		size := min(max(arenaMin, lists, strings.Count(rest, ",")+strings.Count(rest, "[")-strings.Count(rest, ":")+1), arenaMax)
		switch c := cap(p.arena); {
		case c > 0:
			p.arena = make([]Value, 0, max(min(2*c, arenaMax), n))
		case p.sc != nil:
			p.arena = makeRoom(p.sc.arena, max(size, n))
			p.sc.arenaUsed = p.arena[:cap(p.arena)]
		default:
			p.arena = make([]Value, 0, max(size, n))
		}
	}
	i := len(p.arena)
	p.arena = append(p.arena, items...)
	// The stack above start is not cleared: every item is written
	// before it is read, and the pooled stack keeps what it held no
	// longer than the pool keeps it.
	p.stack = p.stack[:start]
	return p.arena[i : i+n : i+n]
}

// posAt returns the position of byte offset off.
func (p *parser) posAt(off int) Pos {
	if off < p.cur.Offset {
		p.cur = startPos
	}
	p.cur = position(p.lx.src, p.cur, off)
	return p.cur
}

func (p *parser) advance() { p.lx.next(&p.tok) }

func (p *parser) errorAt(t *token, format string, args ...any) *ParseError {
	pos := p.posAt(t.off)
	return &ParseError{Line: pos.Line, Column: pos.Column, Reason: fmt.Sprintf(format, args...)}
}

// expect consumes a token of the given kind and returns its text.
func (p *parser) expect(kind tokKind) (string, error) {
	if p.tok.kind != kind {
		return "", p.errorAt(&p.tok, "Expected %s, got %s", kind, p.tok.kind)
	}
	text := p.tok.text
	p.advance()
	return text, nil
}

func (p *parser) skipNewlines() {
	for p.tok.kind == tokNewline {
		p.advance()
	}
}

func (p *parser) parseProgram() (*Program, error) {
	var prog *Program
	if p.sc != nil {
		prog = &p.sc.prog
		*prog = Program{}
	} else {
		prog = &Program{}
	}
	prog.src = p.lx.src
	aliases := aliasSet{mapRoom: min(len(p.lx.src)/64, MaxDeclarations), room: -1}
	for p.tok.kind != tokEOF {
		p.skipNewlines()
		switch p.tok.kind {
		case tokLvarOpen, tokLactOpen:
			if len(prog.Lvars)+len(prog.Lacts) >= MaxDeclarations {
				return nil, p.errorAt(&p.tok, "Too many declarations - exceeded max of %d", MaxDeclarations)
			}
			if aliases.room < 0 {
				if p.sc != nil && !p.count.known && cap(p.sc.lvars) > 0 {
					// Pooled storage has room already; append grows it
					// when short, so counting the tags is not worth a
					// pass over the text.
					aliases.room, aliases.lactRoom = cap(p.sc.lvars), max(cap(p.sc.lacts), 1)
				} else {
					aliases.room, aliases.lactRoom = p.declRoom()
				}
			}
			kind := p.tok.kind
			h, body, off, err := p.parseDecl()
			if err != nil {
				return nil, err
			}
			var decl int
			if kind == tokLvarOpen {
				if prog.Lvars == nil {
					if p.sc != nil {
						prog.Lvars = makeRoom(p.sc.lvars, max(aliases.room, 1))
					} else {
						prog.Lvars = make([]Lvar, 0, max(aliases.room, 1))
					}
				}
				decl = len(prog.Lvars)
				prog.Lvars = append(prog.Lvars, Lvar{Head: h, Content: body, Offset: off})
			} else {
				if prog.Lacts == nil {
					if p.sc != nil {
						prog.Lacts = makeRoom(p.sc.lacts, max(aliases.lactRoom, 1))
					} else {
						prog.Lacts = make([]Lact, 0, max(aliases.lactRoom, 1))
					}
				}
				decl = -len(prog.Lacts) - 1
				prog.Lacts = append(prog.Lacts, Lact{Head: h, Call: body, Offset: off})
			}
			if !aliases.add(h.Alias, decl, prog) {
				return nil, p.errorAt(&p.tok, "Duplicate alias '%s' - aliases must be unique across lvars and lacts", h.Alias)
			}
		case tokOutOpen:
			out, err := p.parseOut()
			if err != nil {
				return nil, err
			}
			prog.Out = out
			prog.aliases = aliases.many
			prog.parsed = true
			return prog, nil
		case tokEOF:
		default:
			p.advance()
		}
	}
	prog.aliases = aliases.many
	prog.parsed = true
	return prog, nil
}

// aliasSig returns the bit of an aliasSet's signature for alias, from its
// length and its first and last bytes.
func aliasSig(alias string) uint64 {
	h := uint(len(alias)) * 31
	if alias != "" {
		h += uint(alias[0])*7 + uint(alias[len(alias)-1])
	}
	return 1 << (h % 64)
}

// grow returns s with one more element, which the caller sets whole: from
// s's room when it has some, without zeroing it first.
func grow[T any](s []T) []T {
	if len(s) < cap(s) {
		return s[:len(s)+1]
	}
	var zero T
	return append(s, zero)
}

// aliasSet is the set of declared aliases: a slice scanned linearly while
// small (most responses declare a handful), a map beyond. The map holds
// each alias's declaration as decls.index does, so assembly can reuse it.
type aliasSet struct {
	few [aliasSetSmall]string
	n   int
	// sig has bit aliasSig(a) set for every alias a in few, so that most
	// new aliases are known new without a scan.
	sig  uint64
	many map[string]int
	// mapRoom is the size to give the map when it is made.
	mapRoom int
	// room and lactRoom are the sizes to give the lvar and lact slices;
	// room is -1 before the first declaration.
	room, lactRoom int
}

const aliasSetSmall = 16

// add adds alias, declared at decl (i for Lvars[i], -i-1 for Lacts[i],
// already in prog), and reports whether it was new. While the set is
// small its signature rules most new aliases out and the rest are
// compared (see sameName); once it is full, the map is made from prog's
// other declarations.
func (a *aliasSet) add(alias string, decl int, prog *Program) bool {
	if a.many == nil {
		bit := aliasSig(alias)
		if a.sig&bit != 0 {
			for _, x := range a.few[:a.n] {
				if sameName(x, alias) {
					return false
				}
			}
		}
		if a.n < aliasSetSmall {
			a.few[a.n] = alias
			a.n++
			a.sig |= bit
			return true
		}
		a.many = make(map[string]int, max(2*aliasSetSmall, a.mapRoom))
		for i := range prog.Lvars {
			if i != decl {
				a.many[prog.Lvars[i].Alias] = i
			}
		}
		for i := range prog.Lacts {
			if -i-1 != decl {
				a.many[prog.Lacts[i].Alias] = -i - 1
			}
		}
	}
	if _, dup := a.many[alias]; dup {
		return false
	}
	a.many[alias] = decl
	return true
}

// parseDecl parses `<lvar HEAD>BODY</lvar>` (or lact) at the current
// token and returns the head, the trimmed body and the tag's offset.
func (p *parser) parseDecl() (Head, string, int, error) {
	open := p.tok
	p.advance()
	p.skipNewlines()
	first, err := p.expect(tokID)
	if err != nil {
		return Head{}, "", 0, err
	}
	var h Head
	switch p.tok.kind {
	case tokDot:
		p.advance()
		field, err := p.expect(tokID)
		if err != nil {
			return Head{}, "", 0, err
		}
		h.Model, h.Field, h.Alias = first, field, field
		if p.tok.kind == tokID {
			h.Alias = p.tok.text
			p.advance()
		}
	case tokID:
		h.Hint, h.Alias = first, p.tok.text
		p.advance()
	default:
		h.Alias = first
	}
	if _, err := p.expect(tokGT); err != nil {
		return Head{}, "", 0, err
	}
	// The lexer always yields the body right after the head's '>'.
	body := p.tok
	if body.kind != tokBody || !body.closed {
		name := "lvar"
		if open.kind == tokLactOpen {
			name = "lact"
		}
		return Head{}, "", 0, p.errorAt(&body, "Unclosed %s tag - missing </%s>", name, name)
	}
	p.advance() // the closing tag
	p.advance() // the token after it
	return h, trimLNDLSpace(body.text), open.off, nil
}

// readName reads an identifier and its dotted continuation (`a.b.c`); a
// dot not followed by an identifier is consumed and dropped. It reports
// whether the name has dots.
func (p *parser) readName() (string, bool) {
	name := p.tok.text
	start := p.tok.off
	end := start + len(name)
	p.advance()
	if p.tok.kind != tokDot {
		return name, false
	}
	// While the parts are adjacent in the source the name is a slice of
	// it; b collects the parts once they are not.
	var b []byte
	contiguous := true
	dotted := false
	for p.tok.kind == tokDot {
		dotOff := p.tok.off
		p.advance()
		if p.tok.kind != tokID {
			break
		}
		id := p.tok
		if contiguous && (dotOff != end || id.off != dotOff+1) {
			contiguous = false
			b = append(make([]byte, 0, end-start+1+len(id.text)), p.lx.src[start:end]...)
		}
		if contiguous {
			end = id.off + len(id.text)
		} else {
			b = append(b, '.')
			b = append(b, id.text...)
		}
		dotted = true
		p.advance()
	}
	switch {
	case !dotted:
		return name, false
	case contiguous:
		return p.lx.src[start:end], true
	}
	return string(b), true
}

func (p *parser) parseOut() (*Out, error) {
	out := p.newOut(p.tok.off)
	out.Entries = p.makeEntries(8)
	p.advance()
	p.skipNewlines()
	var start token // the first token of the entry being parsed
	add := func(e OutEntry) error {
		if len(out.Entries) >= MaxOutEntries {
			return p.errorAt(&start, "OUT block has too many entries - exceeded max of %d", MaxOutEntries)
		}
		out.Entries = append(out.Entries, e)
		return nil
	}
	for p.tok.kind != tokOutClose && p.tok.kind != tokEOF {
		p.skipNewlines()
		start = p.tok
		var key string
		switch p.tok.kind {
		case tokOutClose, tokEOF:
			continue
		case tokLBracket:
			list, err := p.parseList(1)
			if err != nil {
				return nil, err
			}
			if err := add(OutEntry{Kind: EntryGroup, Value: list}); err != nil {
				return nil, err
			}
			p.skipSeparator()
			continue
		case tokStr:
			// A quoted key (LNDL-D3); without ':' the string is skipped.
			key = p.tok.text
			p.advance()
			p.skipNewlines()
			if p.tok.kind != tokColon {
				continue
			}
		case tokID:
			name, _ := p.readName()
			p.skipNewlines()
			if p.tok.kind != tokColon {
				if err := add(OutEntry{Kind: EntryShortcut, Name: name}); err != nil {
					return nil, err
				}
				p.skipSeparator()
				continue
			}
			key = name
		default:
			p.advance()
			continue
		}
		// At the colon of `key: value`.
		p.advance()
		p.skipNewlines()
		v, ok, err := p.parseValue()
		if err != nil {
			return nil, err
		}
		if ok {
			if err := add(OutEntry{Kind: EntryKeyed, Key: key, Value: v}); err != nil {
				return nil, err
			}
		}
		p.skipSeparator()
	}
	if len(out.Entries) == 0 {
		out.Entries = nil
	}
	return out, nil
}

// skipSeparator skips newlines and one comma.
func (p *parser) skipSeparator() {
	p.skipNewlines()
	if p.tok.kind == tokComma {
		p.advance()
	}
}

// parseValue parses the value of a keyed OUT entry. ok is false when the
// token starts no value: it is consumed and the key dropped.
func (p *parser) parseValue() (Value, bool, error) {
	switch p.tok.kind {
	case tokLBracket:
		v, err := p.parseList(1)
		return v, err == nil, err
	case tokStr:
		v := Value{Kind: ValueString, Text: p.tok.text}
		p.advance()
		return v, true, nil
	case tokNum:
		v, err := p.number(p.tok)
		if err != nil {
			return Value{}, false, err
		}
		p.advance()
		return v, true, nil
	case tokID:
		switch {
		case asciiEqualFold(p.tok.text, "true"):
			p.advance()
			return Value{Kind: ValueBool, Bool: true}, true, nil
		case asciiEqualFold(p.tok.text, "false"):
			p.advance()
			return Value{Kind: ValueBool, Bool: false}, true, nil
		}
		name, dotted := p.readName()
		if !dotted && asciiEqualFold(name, "null") {
			return Value{Kind: ValueNull}, true, nil
		}
		return Value{Kind: ValueList, List: []Value{{Kind: ValueRef, Text: name}}}, true, nil
	}
	p.advance()
	return Value{}, false, nil
}

// parseList parses `[...]` at the current token; depth counts this list.
func (p *parser) parseList(depth int) (Value, error) {
	if depth > MaxDepth {
		return Value{}, p.errorAt(&p.tok, "OUT block nesting too deep - exceeded max depth of %d", MaxDepth)
	}
	p.advance()
	p.skipNewlines()
	if p.listStart < 0 {
		p.listStart = p.tok.off
	}
	start := len(p.stack)
	for p.tok.kind != tokRBracket && p.tok.kind != tokEOF {
		p.skipNewlines()
		switch p.tok.kind {
		case tokRBracket, tokEOF:
			continue
		case tokLBracket:
			v, err := p.parseList(depth + 1)
			if err != nil {
				return Value{}, err
			}
			p.stack = append(p.stack, v)
		case tokID:
			name, dotted := p.readName()
			switch {
			case dotted:
				p.stack = append(p.stack, Value{Kind: ValueRef, Text: name})
			case asciiEqualFold(name, "true"):
				p.stack = append(p.stack, Value{Kind: ValueBool, Bool: true})
			case asciiEqualFold(name, "false"):
				p.stack = append(p.stack, Value{Kind: ValueBool, Bool: false})
			case asciiEqualFold(name, "null"):
				p.stack = append(p.stack, Value{Kind: ValueNull})
			default:
				p.stack = append(p.stack, Value{Kind: ValueRef, Text: name})
			}
		case tokStr:
			p.stack = append(p.stack, Value{Kind: ValueString, Text: p.tok.text})
			p.advance()
		case tokNum:
			v, err := p.number(p.tok)
			if err != nil {
				return Value{}, err
			}
			p.stack = append(p.stack, v)
			p.advance()
		default:
			p.advance()
		}
		p.skipSeparator()
	}
	if p.tok.kind == tokRBracket {
		p.advance()
	}
	return Value{Kind: ValueList, List: p.finishList(start)}, nil
}

// asciiEqualFold compares s with the lower-case ASCII word w, ignoring
// ASCII case only (Python's str.lower() maps no other character onto
// these letters).
func asciiEqualFold(s, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// number converts a number token: an integer without '.' or exponent,
// else a float. Value.Text holds the canonical form: the exact decimal
// integer (no leading zeros, no "-0"), or the float in Python's repr form
// (shortest round-trip digits, always with '.' or an exponent).
func (p *parser) number(t token) (Value, error) {
	lit := asciiDigits(t.text)
	invalid := func() (Value, error) {
		return Value{}, p.errorAt(&t, "Invalid number literal %s", quoteLiteral(t.text))
	}
	if !hasFloatByte(lit) {
		neg := strings.HasPrefix(lit, "-")
		digits := strings.TrimPrefix(lit, "-")
		if digits == "" || len(digits) > MaxIntDigits || strings.TrimLeft(digits, "0123456789") != "" {
			return invalid()
		}
		digits = strings.TrimLeft(digits, "0")
		if digits == "" {
			return Value{Kind: ValueInt, Text: "0"}, nil
		}
		if neg {
			digits = "-" + digits
		}
		return Value{Kind: ValueInt, Text: digits}, nil
	}
	if plainFloatIsRepr(lit) {
		return Value{Kind: ValueFloat, Text: lit}, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return invalid()
	}
	return Value{Kind: ValueFloat, Text: pythonFloatRepr(f)}, nil
}

// hasFloatByte reports whether lit holds '.', 'e' or 'E'.
func hasFloatByte(lit string) bool {
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; c == '.' || c == 'e' || c == 'E' {
			return true
		}
	}
	return false
}

// plainFloatIsRepr reports whether lit, a literal like "0.92" or "-12.5",
// is already its own Python repr: digits '.' digits, no exponent, no
// redundant zero, at most 15 significant digits (so no shorter decimal
// maps to the same float) and a magnitude that repr writes in fixed
// notation (1e-4 <= |x| < 1e16).
func plainFloatIsRepr(lit string) bool {
	s := strings.TrimPrefix(lit, "-")
	intPart, frac, ok := strings.Cut(s, ".")
	if !ok || intPart == "" || frac == "" || frac[len(frac)-1] == '0' {
		return false
	}
	if !allASCIIDigits(intPart) || !allASCIIDigits(frac) {
		return false
	}
	if intPart != "0" {
		return intPart[0] != '0' && len(intPart)+len(frac) <= 15
	}
	sig := strings.TrimLeft(frac, "0")
	return len(frac)-len(sig) <= 3 && len(sig) <= 15
}

// allASCIIDigits reports whether s holds only the digits 0-9.
func allASCIIDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// quoteLiteral quotes a literal for an error message, shortening a very
// long one to its ends and its length.
func quoteLiteral(s string) string {
	const keep = 40
	if len(s) <= 2*keep+3 {
		return "'" + s + "'"
	}
	return fmt.Sprintf("'%s...%s' (%d characters)", s[:keep], s[len(s)-keep:], utf8.RuneCountInString(s))
}

// asciiDigits maps non-ASCII decimal digits of a number literal to ASCII;
// another digit (a superscript, ...) is kept and makes the literal invalid.
func asciiDigits(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r >= utf8.RuneSelf {
			if v := decimalDigitValue(r); v >= 0 {
				r = rune('0' + v)
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}
