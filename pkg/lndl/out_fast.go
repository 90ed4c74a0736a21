package lndl

// fastOut parses the OUT block at the current OUT_OPEN token straight from
// the source for the common shapes: entries `key: value` where the key is
// a name, and values are lists, names (dotted without spaces), true, false,
// null, numbers and strings without backslashes, separated by white space,
// newlines and commas. It leaves the parser as parseOut does. ok is false
// for anything else (a quoted key, a group or shortcut entry, a character
// the shapes do not use, a non-ASCII byte, an error, a bound reached); the
// parser state is then unchanged and the token parser reads the block.
// Whenever ok is true the result is the one the token parser gives
// (FuzzParse checks it). It reads from and advances p.fi.
func (p *parser) fastOut() (*Out, bool) {
	if p.noFastPath {
		return nil, false
	}
	p.fi = p.lx.off
	stackLen, arena, listStart := len(p.stack), p.arena, p.listStart
	out, ok := p.foOut()
	if !ok {
		clear(p.stack[stackLen:])
		p.stack = p.stack[:stackLen]
		p.arena = arena
		p.listStart = listStart
		return nil, false
	}
	return out, true
}

// foSpace skips spaces, tabs, carriage returns and newlines.
func (p *parser) foSpace() {
	for p.fi < len(p.lx.src) {
		switch p.lx.src[p.fi] {
		case ' ', '\t', '\r', '\n':
			p.fi++
		default:
			return
		}
	}
}

// foSeparator skips white space, one comma and white space.
func (p *parser) foSeparator() {
	p.foSpace()
	if p.fi < len(p.lx.src) && p.lx.src[p.fi] == ',' {
		p.fi++
		p.foSpace()
	}
}

// foDelimited reports whether the byte at p.fi may follow a name or number
// token as the lexer would end it there.
func (p *parser) foDelimited() bool {
	if p.fi >= len(p.lx.src) {
		return false
	}
	switch p.lx.src[p.fi] {
	case ' ', '\t', '\r', '\n', ',', ']', '}', ':':
		return true
	}
	return false
}

// foIdent reads an ASCII identifier at p.fi; ok is false when none starts
// there.
func (p *parser) foIdent() (string, bool) {
	start := p.fi
	if start >= len(p.lx.src) {
		return "", false
	}
	if c := p.lx.src[start]; !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return "", false
	}
	j := start + 1
	for j < len(p.lx.src) && p.lx.src[j] < 0x80 && asciiIdentPart[p.lx.src[j]] {
		j++
	}
	p.fi = j
	return p.lx.src[start:j], true
}

// foName reads a name and the `.part`s written right after it, and reports
// whether it has dots; ok is false for a dot not followed by a name, or a
// name not ended by a delimiter.
func (p *parser) foName() (name string, dotted, ok bool) {
	start := p.fi
	if _, ok := p.foIdent(); !ok {
		return "", false, false
	}
	for p.fi < len(p.lx.src) && p.lx.src[p.fi] == '.' {
		p.fi++
		if _, ok := p.foIdent(); !ok {
			return "", false, false
		}
		dotted = true
	}
	if !p.foDelimited() {
		return "", false, false
	}
	return p.lx.src[start:p.fi], dotted, true
}

// foNumber reads a number at p.fi (a digit, or '-' and a digit).
func (p *parser) foNumber() (Value, bool) {
	start := p.fi
	j := start
	if j < len(p.lx.src) && p.lx.src[j] == '-' {
		j++
	}
	if j >= len(p.lx.src) || p.lx.src[j] < '0' || p.lx.src[j] > '9' {
		return Value{}, false
	}
	for j < len(p.lx.src) && (p.lx.src[j] >= '0' && p.lx.src[j] <= '9' || p.lx.src[j] == '.') {
		j++
	}
	p.fi = j
	if !p.foDelimited() {
		return Value{}, false
	}
	v, err := p.number(token{kind: tokNum, text: p.lx.src[start:j], off: start})
	return v, err == nil
}

// foStr reads a quoted string without backslashes at p.fi, as the lexer does;
// ok is false for one with a backslash or without its closing quote.
func (p *parser) foStr() (string, bool) {
	quote := p.lx.src[p.fi]
	start := p.fi + 1
	j := start
	for j < len(p.lx.src) && p.lx.src[j] != quote && p.lx.src[j] != '\\' {
		j++
	}
	if j >= len(p.lx.src) || p.lx.src[j] != quote {
		return "", false
	}
	p.fi = j + 1
	return p.lx.src[start:j], true
}

// foOut reads the entries up to the closing brace.
func (p *parser) foOut() (*Out, bool) {
	var entries []OutEntry
	p.foSpace()
	for {
		if p.fi >= len(p.lx.src) {
			return nil, false
		}
		if p.lx.src[p.fi] == '}' {
			break
		}
		if len(entries) >= MaxOutEntries {
			return nil, false
		}
		key, dotted, ok := p.foName()
		if !ok || dotted {
			return nil, false
		}
		p.foSpace()
		if p.fi >= len(p.lx.src) || p.lx.src[p.fi] != ':' {
			return nil, false
		}
		p.fi++
		p.foSpace()
		v, ok := p.foValue()
		if !ok {
			return nil, false
		}
		if entries == nil {
			entries = make([]OutEntry, 0, 8)
		}
		entries = append(entries, OutEntry{Kind: EntryKeyed, Key: key, Value: v})
		p.foSeparator()
	}
	out := &Out{Pos: p.posAt(p.tok.off), Entries: entries}
	p.lx.off = p.fi + 1
	p.lx.inOut = false
	p.lx.set(&p.tok, tokOutClose, "}", p.fi)
	return out, true
}

// foValue reads the value of a keyed entry, as parseValue.
func (p *parser) foValue() (Value, bool) {
	if p.fi >= len(p.lx.src) {
		return Value{}, false
	}
	switch c := p.lx.src[p.fi]; {
	case c == '[':
		return p.foList(1)
	case c == '-' || '0' <= c && c <= '9':
		return p.foNumber()
	case c == '"' || c == '\'':
		text, ok := p.foStr()
		return Value{Kind: ValueString, Text: text}, ok
	}
	start := p.fi
	id, ok := p.foIdent()
	if !ok {
		return Value{}, false
	}
	if p.fi < len(p.lx.src) && p.lx.src[p.fi] == '.' && (asciiEqualFold(id, "true") || asciiEqualFold(id, "false")) {
		return Value{}, false
	}
	p.fi = start
	name, dotted, ok := p.foName()
	if !ok {
		return Value{}, false
	}
	switch {
	case !dotted && asciiEqualFold(name, "true"):
		return Value{Kind: ValueBool, Bool: true}, true
	case !dotted && asciiEqualFold(name, "false"):
		return Value{Kind: ValueBool, Bool: false}, true
	case !dotted && asciiEqualFold(name, "null"):
		return Value{Kind: ValueNull}, true
	}
	return Value{Kind: ValueList, List: []Value{{Kind: ValueRef, Text: name}}}, true
}

// foList reads `[...]` at p.fi, as parseList; depth counts this list.
func (p *parser) foList(depth int) (Value, bool) {
	if depth > MaxDepth {
		return Value{}, false
	}
	p.fi++
	p.foSpace()
	if p.listStart < 0 {
		p.listStart = p.fi
	}
	start := len(p.stack)
	for {
		if p.fi >= len(p.lx.src) {
			return Value{}, false
		}
		c := p.lx.src[p.fi]
		switch {
		case c == ']':
			p.fi++
			return Value{Kind: ValueList, List: p.finishList(start)}, true
		case c == '[':
			v, ok := p.foList(depth + 1)
			if !ok {
				return Value{}, false
			}
			p.stack = append(p.stack, v)
		case c == '-' || '0' <= c && c <= '9':
			v, ok := p.foNumber()
			if !ok {
				return Value{}, false
			}
			p.stack = append(p.stack, v)
		case c == '"' || c == '\'':
			text, ok := p.foStr()
			if !ok {
				return Value{}, false
			}
			p.stack = append(p.stack, Value{Kind: ValueString, Text: text})
		default:
			name, dotted, ok := p.foName()
			if !ok {
				return Value{}, false
			}
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
		}
		p.foSeparator()
	}
}
