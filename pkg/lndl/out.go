package lndl

import "strings"

// Fields merges the entries of an OUT block into its map of keys, in
// first-insertion order (docs/lndl.md#the-out-block):
//
//   - `key: value` sets the key; a duplicate key replaces the value and
//     keeps the first position;
//   - a shortcut `name` appends a reference to name to the list under its
//     spec, creating the list if the spec is absent; it is dropped if the
//     spec holds a non-list;
//   - an anonymous group is appended to the list under its spec, or
//     replaces a non-list value; a group with no spec is dropped.
//
// bind gives the spec of a name: of a shortcut's name, or of a group's
// first item (or of the first item of its first nested group) when that
// item is a reference; a group whose first item is no reference has no
// spec and is dropped. Pass [Program.DefaultBinding] for the binding
// without a target; assembly supplies a target-aware one (LNDL-D4). A bind
// that returns "" gives the name no spec: a shortcut then falls back to the
// name's first dot-separated segment, and a group is dropped.
//
// The returned values share no list with the entries: the caller may
// modify them. Fields of a nil *Out is nil.
func (o *Out) Fields(bind func(name string) string) []Field {
	if o == nil {
		return nil
	}
	fields := make([]Field, 0, len(o.Entries))
	// owned[i] is set when fields[i].Value.List was built here and may be
	// appended to.
	owned := make([]bool, 0, len(o.Entries))
	// Keys are found by a linear scan while few, by a map beyond.
	var index map[string]int
	find := func(key string) (int, bool) {
		if index != nil {
			i, ok := index[key]
			return i, ok
		}
		for i := range fields {
			if fields[i].Key == key {
				return i, true
			}
		}
		return 0, false
	}
	set := func(key string, v Value, own bool) {
		if i, ok := find(key); ok {
			fields[i].Value = v
			owned[i] = own
			return
		}
		fields = append(fields, Field{Key: key, Value: v})
		owned = append(owned, own)
		switch {
		case index != nil:
			index[key] = len(fields) - 1
		case len(fields) > smallSet:
			index = make(map[string]int, 2*len(fields))
			for i := range fields {
				index[fields[i].Key] = i
			}
		}
	}
	appendTo := func(i int, item Value) {
		if !owned[i] {
			old := fields[i].Value.List
			list := make([]Value, len(old), len(old)+4)
			copy(list, old)
			fields[i].Value.List = list
			owned[i] = true
		}
		fields[i].Value.List = append(fields[i].Value.List, item)
	}
	for _, e := range o.Entries {
		switch e.Kind {
		case EntryKeyed:
			set(e.Key, e.Value, false)
		case EntryShortcut:
			spec := bind(e.Name)
			if spec == "" {
				spec = firstSegment(e.Name)
			}
			ref := Value{Kind: ValueRef, Text: e.Name}
			i, ok := find(spec)
			switch {
			case !ok:
				set(spec, Value{Kind: ValueList, List: []Value{ref}}, true)
			case fields[i].Value.Kind == ValueList:
				appendTo(i, ref)
			}
		case EntryGroup:
			first, ok := groupHead(e.Value)
			if !ok {
				continue
			}
			spec := bind(first)
			if spec == "" {
				continue
			}
			if i, ok := find(spec); ok && fields[i].Value.Kind == ValueList {
				appendTo(i, e.Value)
				continue
			}
			set(spec, Value{Kind: ValueList, List: []Value{e.Value}}, true)
		}
	}
	return fields
}

// keyedFields returns the merged fields of the block (see Fields) as
// keyed entries: the entries themselves when all are keyed with distinct
// keys, as in most blocks, else the fields Fields gives. The caller must
// not modify them.
func (o *Out) keyedFields(bind func(name string) string) []OutEntry {
	if o == nil {
		return nil
	}
	if o.keyedDistinct() {
		return o.Entries
	}
	fields := o.Fields(bind)
	entries := make([]OutEntry, len(fields))
	for i := range fields {
		entries[i] = OutEntry{Kind: EntryKeyed, Key: fields[i].Key, Value: fields[i].Value}
	}
	return entries
}

// keyedDistinct reports whether every entry is keyed and no key repeats.
func (o *Out) keyedDistinct() bool {
	var seen map[string]bool
	if len(o.Entries) > smallSet {
		seen = make(map[string]bool, len(o.Entries))
	}
	for i := range o.Entries {
		e := &o.Entries[i]
		if e.Kind != EntryKeyed {
			return false
		}
		if seen != nil {
			if seen[e.Key] {
				return false
			}
			seen[e.Key] = true
			continue
		}
		for j := range i {
			if o.Entries[j].Key == e.Key {
				return false
			}
		}
	}
	return true
}

// groupHead returns the name a group binds by: its first item when that is
// a reference, or the first item of its first item when that is a list
// whose first item is a reference.
func groupHead(g Value) (string, bool) {
	if len(g.List) == 0 {
		return "", false
	}
	first := g.List[0]
	switch first.Kind {
	case ValueRef:
		return first.Text, true
	case ValueList:
		if len(first.List) > 0 && first.List[0].Kind == ValueRef {
			return first.List[0].Text, true
		}
	}
	return "", false
}

// Spec returns the spec a head binds to without a target: the field of a
// `Model.field` head, the hint of a `hint alias` head, else "".
func (h Head) Spec() string {
	switch {
	case h.Field != "":
		return h.Field
	case h.Model != "":
		return h.Model
	default:
		return h.Hint
	}
}

// DefaultBinding returns the binding of shortcuts and groups without a
// target, for [Out.Fields] (docs/lndl.md#binding): an alias
// declared `Model.field` binds to field, one declared `hint alias` to hint,
// any other name to its first dot-separated segment (`note.x` → note, `a`
// → a). Assembly binds with the same rules plus the target's (LNDL-D4).
func (p *Program) DefaultBinding() func(name string) string {
	return (&binder{d: indexDecls(p)}).bind
}

// smallSet is the size up to which a linear scan is used instead of a map.
const smallSet = 16

// firstSegment returns name up to its first dot.
func firstSegment(name string) string {
	s, _, _ := strings.Cut(name, ".")
	return s
}
