package lndl

// Pos is a position in the parsed text. Offset counts bytes from the start;
// Line and Column follow the convention of [ParseError]. The nodes of a
// [Program] record byte offsets only; [Program.Position] turns one into a
// Pos.
type Pos struct {
	Offset int
	Line   int
	Column int
}

// Program is a parsed LNDL text: its declarations in source order and its
// OUT block, if any.
type Program struct {
	Lvars []Lvar
	Lacts []Lact
	// Out is nil when the text has no OUT block.
	Out *Out

	// aliases, set by Parse for programs with many declarations, maps
	// each alias to its declaration (i for Lvars[i], -i-1 for Lacts[i]);
	// assembly reuses it. Read only.
	aliases map[string]int
	// src is the parsed text, for Position.
	src string
	// parsed is set by Parse, whose programs declare every alias once.
	parsed bool
}

// Position returns the line and column of byte offset off of the parsed
// text (an Offset of one of p's nodes), counted when asked for. An offset
// outside the text is taken as its end.
func (p *Program) Position(off int) Pos {
	off = min(max(off, 0), len(p.src))
	return position(p.src, startPos, off)
}

// Head is the head of an <lvar ...> or <lact ...> tag. A namespaced head
// (`Model.field alias` or `Model.field`) sets Model and Field; a raw head
// (`hint alias` or `alias`) leaves them empty and sets Hint for the two-token
// form. Alias is always set.
type Head struct {
	Model string
	Field string
	Alias string
	Hint  string
}

// Namespaced reports whether the head is of the form Model.field.
func (h Head) Namespaced() bool { return h.Model != "" }

// Lvar is a declared value: its head, its trimmed body text and the byte
// offset of its opening tag (see [Program.Position]).
type Lvar struct {
	Head
	Content string
	Offset  int
}

// Lact is a declared action: its head and its trimmed body, a call
// expression parsed only when used (see [ParseCall]).
//
// Offset is the byte offset of its opening tag (see [Program.Position]).
type Lact struct {
	Head
	Call   string
	Offset int
}

// EntryKind says which form an OUT entry has.
type EntryKind uint8

// OUT entry forms.
const (
	// EntryKeyed is `key: value`.
	EntryKeyed EntryKind = iota
	// EntryShortcut is a bare name, `OUT{a, b}`.
	EntryShortcut
	// EntryGroup is an anonymous group, `OUT{[a, b]}`.
	EntryGroup
)

// OutEntry is one entry of an OUT block, as written. Binding shortcuts and
// groups to fields needs the target, so the entries are kept as well as
// the merged map (see [Out.Fields]).
type OutEntry struct {
	Kind EntryKind
	// Key is the key of a keyed entry.
	Key string
	// Name is the name of a shortcut (dotted names kept whole).
	Name string
	// Value is the value of a keyed entry, or the list of a group.
	Value Value
}

// Out is an OUT{...} block; Offset is the byte offset of its opener (see
// [Program.Position]).
type Out struct {
	Entries []OutEntry
	Offset  int
}

// ValueKind is the kind of an OUT [Value].
type ValueKind uint8

// OUT value kinds.
const (
	ValueNull ValueKind = iota
	ValueBool
	ValueInt
	ValueFloat
	ValueString
	// ValueRef is a reference to a declared alias, a note (`note.x`) or a
	// known action result.
	ValueRef
	// ValueList is a list: its items are literals, references and nested
	// lists.
	ValueList
)

// Value is an OUT value. At the top level of an entry, a bare name is a
// one-reference ValueList; inside lists, names are ValueRef and quoted
// strings are ValueString literals.
type Value struct {
	Kind ValueKind
	// Bool is set for ValueBool.
	Bool bool
	// Text is the string of a ValueString and the name of a ValueRef. For
	// a ValueInt or ValueFloat it is the number's canonical JSON text, not
	// the text as written: an integer exactly, however long, without
	// leading zeros or a plus sign ("007" → "7", "-0" → "0"); a float as
	// Python's repr writes it ("1." → "1.0", "1e10" → "10000000000.0",
	// "6E23" → "6e+23"). Floats are finite.
	Text string
	// List holds the items of a ValueList.
	List []Value
}

// Field is one key of the merged OUT map, in first-insertion order.
type Field struct {
	Key   string
	Value Value
}
