package lndl

import "unicode/utf8"

// fastOut parses the OUT block at the current OUT_OPEN token straight from
// the source for the common shapes: entries `key: value` where the key is
// a name, and values are lists, names (dotted without spaces), true, false,
// null, numbers and strings without backslashes, separated by white space,
// newlines and commas. It leaves the parser as parseOut does. ok is false
// for anything else (a quoted key, a group or shortcut entry, a character
// the shapes do not use, a non-ASCII byte, an error, a bound reached); the
// parser state is then unchanged and the token parser reads the block.
// Whenever ok is true the result is the one the token parser gives
// (FuzzParse checks it).
//
// The scanning functions below take the source and an offset and return
// the offset they read to, so the cursor stays in a register.
func (p *parser) fastOut() (*Out, bool) {
	if p.noFastPath {
		return nil, false
	}
	stackLen, arena, listStart := len(p.stack), p.arena, p.listStart
	out, ok := p.foOut(p.lx.src, p.lx.off)
	if !ok {
		p.stack = p.stack[:stackLen]
		p.arena = arena
		p.listStart = listStart
		return nil, false
	}
	return out, true
}

// foSpace returns the offset of the first byte at or after i that is not
// a space, tab, carriage return or newline.
func foSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	return i
}

// foSeparator skips white space, one comma and white space.
func foSeparator(s string, i int) int {
	i = foSpace(s, i)
	if i < len(s) && s[i] == ',' {
		i = foSpace(s, i+1)
	}
	return i
}

// foDelimited reports whether the byte at i may follow a name or number
// token as the lexer would end it there.
func foDelimited(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	switch s[i] {
	case ' ', '\t', '\r', '\n', ',', ']', '}', ':':
		return true
	}
	return false
}

// foIdent returns the end of the ASCII identifier at i, or i when none
// starts there.
func foIdent(s string, i int) int {
	if i >= len(s) {
		return i
	}
	if c := s[i]; !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return i
	}
	j := i + 1
	for j < len(s) && s[j] < utf8.RuneSelf && asciiIdentPart[s[j]] {
		j++
	}
	return j
}

// foName returns the end of the name at i and the `.part`s written right
// after it, and whether it has dots; ok is false for a dot not followed by
// a name, or a name not ended by a delimiter.
func foName(s string, i int) (end int, dotted, ok bool) {
	j := foIdent(s, i)
	if j == i {
		return i, false, false
	}
	for j < len(s) && s[j] == '.' {
		k := foIdent(s, j+1)
		if k == j+1 {
			return i, false, false
		}
		j, dotted = k, true
	}
	if !foDelimited(s, j) {
		return i, false, false
	}
	return j, dotted, true
}

// foNumberEnd returns the end of the number at i (a digit, or '-' and a
// digit, then digits and dots, ended by a delimiter); ok is false when
// there is none.
func foNumberEnd(s string, i int) (int, bool) {
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	if j >= len(s) || s[j] < '0' || s[j] > '9' {
		return i, false
	}
	for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
		j++
	}
	return j, foDelimited(s, j)
}

// foStr returns the end of the quoted string without backslashes at i and
// its text, as the lexer reads it; ok is false for one with a backslash or
// without its closing quote.
func foStr(s string, i int) (int, string, bool) {
	quote := s[i]
	j := i + 1
	for j < len(s) && s[j] != quote && s[j] != '\\' {
		j++
	}
	if j >= len(s) || s[j] != quote {
		return i, "", false
	}
	return j + 1, s[i+1 : j], true
}

// push adds an item to the list stack. It sets the fields one by one
// into room the stack already has, instead of copying a whole Value in.
func (p *parser) push(kind ValueKind, text string, list []Value, b bool) {
	p.stack = grow(p.stack)
	v := &p.stack[len(p.stack)-1]
	v.Kind, v.Bool, v.Text, v.List = kind, b, text, list
}

// foOut reads the entries from i up to the closing brace.
func (p *parser) foOut(s string, i int) (*Out, bool) {
	var entries []OutEntry
	i = foSpace(s, i)
	for {
		if i >= len(s) {
			return nil, false
		}
		if s[i] == '}' {
			break
		}
		if len(entries) >= MaxOutEntries {
			return nil, false
		}
		end, dotted, ok := foName(s, i)
		if !ok || dotted {
			return nil, false
		}
		key := s[i:end]
		i = foSpace(s, end)
		if i >= len(s) || s[i] != ':' {
			return nil, false
		}
		i = foSpace(s, i+1)
		if entries == nil {
			entries = p.makeEntries(8)
		}
		entries = append(entries, OutEntry{Kind: EntryKeyed, Key: key})
		if i, ok = p.foValue(s, i, &entries[len(entries)-1].Value); !ok {
			return nil, false
		}
		i = foSeparator(s, i)
	}
	out := p.newOut(p.tok.off)
	out.Entries = entries
	p.lx.off = i + 1
	p.lx.inOut = false
	p.lx.set(&p.tok, tokOutClose, "}", i)
	return out, true
}

// foValue reads the value of a keyed entry at i into dst, as parseValue.
func (p *parser) foValue(s string, i int, dst *Value) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '[':
		end, list, ok := p.foList(s, i, 1)
		dst.Kind, dst.List = ValueList, list
		return end, ok
	case c == '-' || '0' <= c && c <= '9':
		end, ok := foNumberEnd(s, i)
		if !ok {
			return i, false
		}
		v, err := p.number(token{kind: tokNum, text: s[i:end], off: i})
		dst.Kind, dst.Text = v.Kind, v.Text
		return end, err == nil
	case c == '"' || c == '\'':
		end, text, ok := foStr(s, i)
		dst.Kind, dst.Text = ValueString, text
		return end, ok
	}
	if id := foIdent(s, i); id == i {
		return i, false
	} else if id < len(s) && s[id] == '.' && (asciiEqualFold(s[i:id], "true") || asciiEqualFold(s[i:id], "false")) {
		return i, false
	}
	end, dotted, ok := foName(s, i)
	if !ok {
		return i, false
	}
	name := s[i:end]
	switch {
	case !dotted && asciiEqualFold(name, "true"):
		dst.Kind, dst.Bool = ValueBool, true
	case !dotted && asciiEqualFold(name, "false"):
		dst.Kind = ValueBool
	case !dotted && asciiEqualFold(name, "null"):
		dst.Kind = ValueNull
	default:
		if p.listStart < 0 {
			p.listStart = i
		}
		p.push(ValueRef, name, nil, false)
		dst.Kind, dst.List = ValueList, p.finishList(len(p.stack)-1)
	}
	return end, true
}

// foList reads `[...]` at i, as parseList, and returns the offset after
// it and its items; depth counts this list.
func (p *parser) foList(s string, i, depth int) (int, []Value, bool) {
	if depth > MaxDepth {
		return i, nil, false
	}
	i = foSpace(s, i+1)
	if p.listStart < 0 {
		p.listStart = i
	}
	start := len(p.stack)
	for {
		if i >= len(s) {
			return i, nil, false
		}
		c := s[i]
		switch {
		case c == ']':
			return i + 1, p.finishList(start), true
		case c == '[':
			end, list, ok := p.foList(s, i, depth+1)
			if !ok {
				return i, nil, false
			}
			p.push(ValueList, "", list, false)
			i = end
		case c == '-' || '0' <= c && c <= '9':
			end, ok := foNumberEnd(s, i)
			if !ok {
				return i, nil, false
			}
			v, err := p.number(token{kind: tokNum, text: s[i:end], off: i})
			if err != nil {
				return i, nil, false
			}
			p.push(v.Kind, v.Text, nil, false)
			i = end
		case c == '"' || c == '\'':
			end, text, ok := foStr(s, i)
			if !ok {
				return i, nil, false
			}
			p.push(ValueString, text, nil, false)
			i = end
		default:
			end, dotted, ok := foName(s, i)
			if !ok {
				return i, nil, false
			}
			name := s[i:end]
			switch {
			case dotted:
				p.push(ValueRef, name, nil, false)
			case asciiEqualFold(name, "true"):
				p.push(ValueBool, "", nil, true)
			case asciiEqualFold(name, "false"):
				p.push(ValueBool, "", nil, false)
			case asciiEqualFold(name, "null"):
				p.push(ValueNull, "", nil, false)
			default:
				p.push(ValueRef, name, nil, false)
			}
			i = end
		}
		i = foSeparator(s, i)
	}
}
