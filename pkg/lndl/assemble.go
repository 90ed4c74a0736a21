package lndl

import (
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Action is a tool call declared by a lact: the lact's alias, the
// function name (`fn` or `svc.fn`) and the literal arguments.
type Action struct {
	Name      string         `json:"name"`
	Function  string         `json:"function"`
	Arguments map[string]any `json:"arguments"`
}

// Placeholder stands in an assembled value for an action that has not run
// yet. It marshals as {"$action": {"name", "function", "arguments"}}.
type Placeholder struct {
	Action Action
}

// MarshalJSON writes {"$action": {...}}.
func (p *Placeholder) MarshalJSON() ([]byte, error) {
	a := p.Action
	if a.Arguments == nil {
		a.Arguments = map[string]any{}
	}
	return json.Marshal(struct {
		Action Action `json:"$action"`
	}{a})
}

// noteNamespace is the model name of note lvars and the prefix of note
// references.
const noteNamespace = "note"

// Assemble builds the structured value of a parsed program's OUT block
// against target (nil for none), as docs/lndl.md#assembly describes. known
// holds action results by alias (from earlier rounds, or executed this
// round); notes is the scratchpad of earlier rounds, overwritten by the
// program's `<lvar note.X ...>` declarations. A lact referenced from OUT
// without a known result becomes a *Placeholder. The result is nil for a
// program without OUT, else an *Object whose values are nil, bool,
// string, json.Number, []any, *Object, *Placeholder or action results as
// given. Errors are LNDL errors: *MissingLvarError, *MissingFieldError,
// *TypeMismatchError, *InvalidConstructorError.
func Assemble(p *Program, target *Target, known, notes map[string]any) (any, error) {
	if p == nil || p.Out == nil {
		return nil, nil
	}
	d := newDecls(p)
	a := getAssembler(d, target, known, mergeNotes(notes, p))
	defer a.release()
	obj, err := a.assemble(p.Out.keyedFields((&binder{d: d, target: target}).bind))
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// mergeNotes returns a copy of notes overwritten by the program's note
// lvars (`<lvar M.X ...>` with M = note in any case): entry X = the body.
func mergeNotes(notes map[string]any, p *Program) map[string]any {
	return mergeNotesBoxed(notes, p, nil)
}

// mergeNotesBoxed is mergeNotes, taking the body of Lvars[i] from
// contents[i] when contents is set (boxed already).
func mergeNotesBoxed(notes map[string]any, p *Program, contents []any) map[string]any {
	out := make(map[string]any, len(notes)+2)
	for k, v := range notes {
		out[k] = v
	}
	if p == nil {
		return out
	}
	for i := range p.Lvars {
		lv := &p.Lvars[i]
		if lv.Field != "" && len(lv.Model) == len(noteNamespace) && strings.EqualFold(lv.Model, noteNamespace) {
			if contents != nil {
				out[lv.Field] = contents[i]
			} else {
				out[lv.Field] = lv.Content
			}
		}
	}
	return out
}

// noteKey returns X for a reference `note.X` (lower-case prefix, X not
// empty).
func noteKey(ref string) (string, bool) {
	if len(ref) > len(noteNamespace)+1 && strings.HasPrefix(ref, noteNamespace+".") {
		return ref[len(noteNamespace)+1:], true
	}
	return "", false
}

type assembler struct {
	target *Target
	d      *decls
	known  map[string]any
	notes  map[string]any
	// calls[i] is the placeholder of the parsed call of Lacts[i], nil
	// when not parsed; made on the first call parsed.
	calls []*Placeholder
	// prevCalls are the calls parsed by an earlier assembly of the same
	// program, as calls; read only.
	prevCalls []*Placeholder
	texts     map[string]string // JSON text of object/array results by name
	// Scratch space reused across fields and groups: parts are consumed
	// (copied into the value being built) before the next resolve.
	partBuf []part
	fill    modelFill
	// refDyn is set by resolve when a reference can resolve differently
	// with more results (a lact, a result or an undeclared name);
	// dynFields are the indexes of the fields assemble found such a
	// reference in, the fields Resolve may assemble again.
	refDyn    bool
	dynFields []int
	// refNote is set by resolve when a value is taken from the notes;
	// anyFields are the indexes of the fields assemble found a note, a
	// lact, a result or an undeclared name in: the only fields that can
	// hold a placeholder.
	refNote   bool
	anyFields []int
	// callBuf is the storage of calls.
	callBuf []*Placeholder
	// slab, while a grouped list of small models is assembled, holds
	// room for its objects.
	slab []smallObject
	// nextLvar is the lvar after the one lookup found last: OUT blocks
	// usually refer to lvars in the order they are declared.
	nextLvar int
}

// lookup is a.d.lookup, trying the lvar after the last one found first
// in a parsed program (where no alias is declared twice).
func (a *assembler) lookup(name string) (int, bool) {
	lvars := a.d.prog.Lvars
	if i := a.nextLvar; a.d.prog.parsed && i < len(lvars) && lvars[i].Alias == name {
		a.nextLvar = i + 1
		return i, true
	}
	i, ok := a.d.lookup(name)
	if ok && i >= 0 {
		a.nextLvar = i + 1
	}
	return i, ok
}

// assemblerPool holds assemblers between uses, so that their scratch
// space is made once.
var assemblerPool = sync.Pool{New: func() any { return new(assembler) }}

// Bounds of the scratch space a pooled assembler keeps.
const (
	maxPooledParts  = 1024
	maxPooledFields = 64
)

// getAssembler returns a pooled assembler set up for one assembly; the
// caller copies what it keeps of a.calls (the assembler reuses it) and
// calls release.
func getAssembler(d *decls, target *Target, known, notes map[string]any) *assembler {
	a := assemblerPool.Get().(*assembler)
	a.target, a.d, a.known, a.notes, a.nextLvar = target, d, known, notes, 0
	return a
}

// release drops the assembler's references to its inputs and pools it.
// Its scratch space is not cleared: every element is written before it is
// read, and what the last assembly left is kept no longer than the pool
// keeps the assembler (sync.Pool drops its items over two garbage
// collections).
func (a *assembler) release() {
	a.target, a.d, a.known, a.notes, a.calls, a.prevCalls, a.texts = nil, nil, nil, nil, nil, nil, nil
	if cap(a.partBuf) > maxPooledParts || cap(a.callBuf) > maxPooledParts ||
		cap(a.fill.keys) > maxPooledFields || cap(a.fill.slot) > maxPooledFields {
		return
	}
	a.partBuf = a.partBuf[:0]
	a.dynFields, a.refDyn = a.dynFields[:0], false
	a.anyFields, a.refNote = a.anyFields[:0], false
	a.fill.release()
	a.fill.m = nil
	assemblerPool.Put(a)
}

// part is one resolved list item: its value and the field it names.
type part struct {
	value any
	field string // "" when the item names no field
	// ref is the name of an item that is a reference (an alias or the
	// name of a known result); "" for literals and notes.
	ref string
	// decl is the index of the declaration of ref in decls.index, for
	// parts with partDeclared.
	decl  int32
	flags partFlags
}

type partFlags uint8

const (
	partLiteral  partFlags = 1 << iota // an OUT literal
	partResult                         // an action result
	partDeclared                       // from a declared alias (ref is it)
	partLvar                           // from an lvar
)

func (p *part) literal() bool { return p.flags&partLiteral != 0 }
func (p *part) result() bool  { return p.flags&partResult != 0 }

// addPart appends a part to parts, setting its fields one by one into
// room parts already has, instead of copying a whole part in.
func addPart(parts []part, value any, field, ref string, decl int32, flags partFlags) []part {
	parts = grow(parts)
	p := &parts[len(parts)-1]
	p.value, p.field, p.ref, p.decl, p.flags = value, field, ref, decl, flags
	return parts
}

// assemble assembles the fields of an OUT block. Their keys are distinct
// (see [Out.keyedFields]), so each is appended without a lookup.
func (a *assembler) assemble(fields []OutEntry) (*Object, error) {
	out := NewObject(len(fields))
	a.dynFields, a.anyFields = a.dynFields[:0], a.anyFields[:0]
	for i := range fields {
		f := &fields[i]
		var ft *Type
		var spec *FieldSpec
		if a.target != nil {
			spec = a.target.Model.fieldNear(f.Key, i)
		}
		if spec != nil {
			ft = shapeType(spec.Type)
		}
		a.refDyn, a.refNote = false, false
		v, err := a.assembleValue(f.Key, f.Value, ft)
		if err != nil {
			return nil, err
		}
		if a.refDyn {
			a.dynFields = append(a.dynFields, i)
		}
		if a.refDyn || a.refNote {
			a.anyFields = append(a.anyFields, i)
		}
		out.setNew(f.Key, v)
	}
	if a.target != nil && a.target.Model != nil {
		var missing []string
		for _, spec := range a.target.Model.Fields {
			if spec.Required && !out.Has(spec.Name) {
				missing = append(missing, spec.Name)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return nil, &MissingFieldError{Fields: missing}
		}
	}
	return out, nil
}

func (a *assembler) assembleValue(key string, v Value, ft *Type) (any, error) {
	if v.Kind != ValueList {
		if v.Kind == ValueString {
			if k, ok := noteKey(v.Text); ok {
				if nv, ok := a.notes[k]; ok {
					a.refNote = true
					return nv, nil
				}
			}
		}
		return literalValue(v), nil
	}
	grouped := false
	for i := range v.List {
		if v.List[i].Kind == ValueList {
			grouped = true
			break
		}
	}
	if !grouped {
		parts, err := a.resolve(v.List)
		if err != nil {
			return nil, err
		}
		if err := a.checkModels(key, parts, ft); err != nil {
			return nil, err
		}
		return a.shape(parts, ft), nil
	}
	elem := ft
	if ft != nil && ft.Kind == KindList {
		elem = shapeType(ft.Elem)
	}
	items := make([]any, 0, len(v.List))
	if elem != nil && elem.Kind == KindModel && len(elem.Model.Fields) <= smallObjectKeys && len(v.List) > 1 {
		// The groups' objects are small: they are made together.
		a.slab = make([]smallObject, len(v.List))
		defer func() { a.slab = nil }()
	}
	for i := range v.List {
		group := v.List[i : i+1]
		if v.List[i].Kind == ValueList {
			group = v.List[i].List
		}
		item, err := a.assembleGroup(key, group, elem)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	return items, nil
}

// assembleGroup shapes one group of a grouped list against the element
// type. An undeclared name makes the group null, or salvages it for a
// model element.
func (a *assembler) assembleGroup(key string, group []Value, elem *Type) (any, error) {
	parts, err := a.resolve(group)
	var value any
	if err != nil {
		if _, missing := err.(*MissingLvarError); !missing {
			return nil, err
		}
	} else {
		if err := a.checkModels(key, parts, elem); err != nil {
			return nil, err
		}
		value = a.shape(parts, elem)
	}
	if value == nil && elem != nil && elem.Kind == KindModel {
		for _, f := range elem.Model.Fields {
			if shapeType(f.Type).Kind != KindString {
				continue
			}
			var words []string
			for _, g := range group {
				if g.Kind == ValueRef || g.Kind == ValueString {
					words = append(words, g.Text)
				}
			}
			obj := NewObject(1)
			obj.Set(f.Name, strings.Join(words, " "))
			return obj, nil
		}
	}
	return value, nil
}

// resolve turns list items into parts (docs/lndl.md#assembly).
// Nested lists are skipped; the first undeclared name is an error.
func (a *assembler) resolve(items []Value) ([]part, error) {
	parts := a.partBuf[:0]
	defer func() { a.partBuf = parts[:0] }()
	for i := range items {
		it := &items[i]
		switch it.Kind {
		case ValueList:
			continue
		case ValueRef:
		default:
			parts = addPart(parts, literalValue(*it), "", "", 0, partLiteral)
			continue
		}
		name := it.Text
		if k, ok := noteKey(name); ok {
			if nv, ok := a.notes[k]; ok {
				a.refNote = true
				parts = addPart(parts, nv, "", "", 0, 0)
			}
			continue
		}
		if di, ok := a.lookup(name); ok && di < 0 {
			a.refDyn = true
			la := &a.d.prog.Lacts[-di-1]
			p := part{field: la.Field, ref: name, decl: int32(di), flags: partDeclared}
			if r, ok := a.known[name]; ok {
				p.value = normalizeResult(r)
				p.flags |= partResult
			} else {
				ph, err := a.placeholder(-di - 1)
				if err != nil {
					return nil, err
				}
				p.value = ph
			}
			parts = append(parts, p)
			continue
		} else if ok {
			lv := &a.d.prog.Lvars[di]
			parts = addPart(parts, a.d.contents[di], lv.Field, name, int32(di), partDeclared|partLvar)
			continue
		}
		a.refDyn = true
		if r, ok := a.known[name]; ok {
			parts = addPart(parts, normalizeResult(r), "", name, 0, partResult)
			continue
		}
		return nil, &MissingLvarError{Alias: name}
	}
	return parts, nil
}

// placeholder parses the call of Lacts[i] once and returns its
// placeholder.
func (a *assembler) placeholder(i int) (*Placeholder, error) {
	if a.calls != nil && a.calls[i] != nil {
		return a.calls[i], nil
	}
	if a.prevCalls != nil && a.prevCalls[i] != nil {
		return a.prevCalls[i], nil
	}
	la := &a.d.prog.Lacts[i]
	act, err := parseAction(la.Alias, la.Call)
	if err != nil {
		return nil, err
	}
	ph := &Placeholder{Action: act}
	if a.calls == nil {
		// The slice is the assembler's: callers copy what they keep.
		a.calls = makeRoom(a.callBuf, len(a.d.prog.Lacts))[:len(a.d.prog.Lacts)]
		clear(a.calls) // nil is "not parsed yet"
		a.callBuf = a.calls
	}
	a.calls[i] = ph
	return ph, nil
}

// checkModels applies the model check (LNDL-D9): for a field whose type
// is a model, or a list of models, named N, an alias declared `M.f` needs
// M = N ignoring case, or M = the OUT key, or to be a note lvar.
func (a *assembler) checkModels(key string, parts []part, ft *Type) error {
	want := modelName(ft)
	if want == "" {
		return nil
	}
	for i := range parts {
		p := &parts[i]
		if p.flags&partDeclared == 0 {
			continue
		}
		h := a.d.headAt(p.decl)
		if h.Model == "" || h.Model == want || strings.EqualFold(h.Model, want) || h.Model == key {
			continue
		}
		if p.flags&partLvar != 0 && strings.EqualFold(h.Model, noteNamespace) {
			continue
		}
		return &TypeMismatchError{Alias: p.ref, Declared: h.Model, Expected: want}
	}
	return nil
}

// shape builds a field's value from its parts (docs/lndl.md#assembly); nil
// for no parts.
func (a *assembler) shape(parts []part, ft *Type) any {
	if len(parts) == 0 {
		return nil
	}
	kind := KindAny
	if ft != nil {
		kind = ft.Kind
	}
	switch kind {
	case KindList:
		if len(parts) == 1 && parts[0].result() {
			if l, ok := parts[0].value.([]any); ok {
				return l
			}
		}
		if elem := shapeType(ft.Elem); elem != nil && elem.Kind == KindModel {
			return a.shapeModelList(parts, elem.Model)
		}
		if len(parts) == 1 && !parts[0].literal() {
			if s, ok := parts[0].value.(string); ok {
				return splitList(s)
			}
		}
		return values(parts)
	case KindDict:
		obj := NewObject(len(parts))
		for _, p := range parts {
			if p.field != "" {
				obj.Set(p.field, p.value)
			}
		}
		return obj
	case KindModel:
		fill := a.newModelFill(ft.Model, parts)
		defer fill.release()
		for i := range parts {
			if parts[i].field != "" {
				fill.set(parts[i].field, i)
			} else if f := fill.nextUnset(); f != "" {
				fill.set(f, i)
			}
		}
		return fill.object(a)
	}
	if len(parts) == 1 {
		return a.coerce(&parts[0], ft)
	}
	return values(parts)
}

func values(parts []part) []any {
	out := make([]any, len(parts))
	for i := range parts {
		out[i] = parts[i].value
	}
	return out
}

// shapeModelList fills list-of-model items: a new item starts when a
// part's field is already set in the current one, or a fieldless part
// finds no unset field.
func (a *assembler) shapeModelList(parts []part, m *Model) []any {
	var items []any
	cur := a.newModelFill(m, parts)
	defer cur.release()
	for i := range parts {
		field := parts[i].field
		if field == "" {
			f := cur.nextUnset()
			if f == "" {
				items = append(items, cur.object(a))
				cur.reset()
				f = cur.nextUnset()
			}
			if f != "" {
				cur.set(f, i)
			}
			continue
		}
		if cur.has(field) {
			items = append(items, cur.object(a))
			cur.reset()
		}
		cur.set(field, i)
	}
	if len(cur.keys) > 0 {
		items = append(items, cur.object(a))
	}
	if items == nil {
		items = []any{}
	}
	return items
}

// modelFill collects the parts of one model object in insertion order.
type modelFill struct {
	m     *Model
	src   []part       // the parts being shaped
	keys  []string     // the keys set, in order
	idx   []int        // idx[i] is the index in src of the part for keys[i]
	specs []*FieldSpec // specs[i] is the field keys[i] names, nil for none
	// slot[p] is the position in keys of the model's field p, or -1.
	slot []int32
	// next is a field position such that every field before it is set.
	next int
}

// newModelFill returns the assembler's fill, emptied, for model m and the
// parts src. Only one fill is in use at a time. Filling costs O(1) per
// part for the model's fields (and O(k) for k keys the model lacks).
func (a *assembler) newModelFill(m *Model, src []part) *modelFill {
	f := &a.fill
	f.m, f.src = m, src
	f.keys, f.idx, f.specs, f.next = f.keys[:0], f.idx[:0], f.specs[:0], 0
	if n := len(m.Fields); cap(f.keys) < n {
		f.keys, f.idx, f.specs = make([]string, 0, n), make([]int, 0, n), make([]*FieldSpec, 0, n)
	}
	if cap(f.slot) < len(m.Fields) {
		f.slot = make([]int32, len(m.Fields))
	}
	f.slot = f.slot[:len(m.Fields)]
	for i := range f.slot {
		f.slot[i] = -1
	}
	return f
}

// reset empties the fill for the next item, in time linear in the keys
// set.
func (f *modelFill) reset() {
	for _, spec := range f.specs {
		if spec != nil {
			f.slot[f.m.fieldPos(spec)] = -1
		}
	}
	f.keys, f.idx, f.specs, f.next = f.keys[:0], f.idx[:0], f.specs[:0], 0
}

func (f *modelFill) release() {
	f.reset()
	f.src = nil
}

// position returns the position in keys of key, or -1, and the field key
// names.
func (f *modelFill) position(key string) (int, *FieldSpec) {
	// Parts usually name the model's fields in order.
	if spec := f.m.fieldNear(key, len(f.keys)); spec != nil {
		return int(f.slot[f.m.fieldPos(spec)]), spec
	}
	for j, k := range f.keys {
		if f.specs[j] == nil && k == key {
			return j, nil
		}
	}
	return -1, nil
}

func (f *modelFill) has(key string) bool {
	j, _ := f.position(key)
	return j >= 0
}

// set sets key to the part src[i].
func (f *modelFill) set(key string, i int) {
	j, spec := f.position(key)
	if j >= 0 {
		f.idx[j] = i
		return
	}
	if spec != nil {
		f.slot[f.m.fieldPos(spec)] = int32(len(f.keys))
	}
	f.keys = append(f.keys, key)
	f.idx = append(f.idx, i)
	f.specs = append(f.specs, spec)
}

// nextUnset returns the first field in declaration order that is not
// set, or "".
func (f *modelFill) nextUnset() string {
	for f.next < len(f.slot) && f.slot[f.next] >= 0 {
		f.next++
	}
	if f.next < len(f.slot) {
		return f.m.Fields[f.next].Name
	}
	return ""
}

// object returns the filled object, each value coerced for its field.
func (f *modelFill) object(a *assembler) *Object {
	var obj *Object
	if len(a.slab) > 0 && len(f.keys) <= smallObjectKeys {
		s := &a.slab[0]
		a.slab = a.slab[1:]
		s.o.pairs = s.b[:0]
		obj = &s.o
	} else {
		obj = NewObject(len(f.keys))
	}
	for i, k := range f.keys {
		var ft *Type
		if spec := f.specs[i]; spec != nil {
			ft = shapeType(spec.Type)
		}
		obj.setNew(k, a.coerceField(&f.src[f.idx[i]], ft))
	}
	return obj
}

// coerceField coerces a value placed in a model's (or list item's) field:
// a string that is not a literal is split for a list-of-scalars field,
// and object or array results become JSON text for a str field.
func (a *assembler) coerceField(p *part, ft *Type) any {
	if ft != nil && ft.Kind == KindList && !p.literal() && !isModel(shapeType(ft.Elem)) {
		if s, ok := p.value.(string); ok {
			return splitList(s)
		}
	}
	return a.coerce(p, ft)
}

// coerce turns an object or array action result into compact JSON text
// for a str field (LNDL-D7); other values are returned as they are.
// The text is made once per result, however often the result is placed.
func (a *assembler) coerce(p *part, ft *Type) any {
	if !p.result() || ft == nil || ft.Kind != KindString {
		return p.value
	}
	switch p.value.(type) {
	case *Object, map[string]any, []any:
		if s, ok := a.texts[p.ref]; ok {
			return s
		}
		if s, err := resultJSONText(p.value); err == nil {
			if a.texts == nil {
				a.texts = make(map[string]string)
			}
			a.texts[p.ref] = s
			return s
		}
	}
	return p.value
}

// literalValue returns the JSON value of an OUT literal.
func literalValue(v Value) any {
	switch v.Kind {
	case ValueBool:
		return v.Bool
	case ValueString, ValueRef:
		return v.Text
	case ValueInt:
		if isJSONNumber(v.Text) {
			return json.Number(v.Text)
		}
		return json.Number(intText(v.Text))
	case ValueFloat:
		if isJSONNumber(v.Text) {
			return json.Number(v.Text)
		}
		return json.Number(floatText(v.Text))
	}
	return nil
}

// isJSONNumber reports whether s is a number as JSON writes it. The
// parser gives integers and floats in that form already (the canonical
// integer and Python's float repr); other text is converted.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// intText returns an integer literal in JSON form (no leading zeros, no
// plus sign); the parser has already checked it is an integer.
func intText(s string) string {
	neg := strings.HasPrefix(s, "-")
	d := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+"), "0")
	if d == "" {
		return "0"
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			if n, ok := new(big.Int).SetString(s, 10); ok {
				return n.String()
			}
			return "0"
		}
	}
	if neg {
		return "-" + d
	}
	return d
}

// floatText returns a float literal in JSON form, written the way Python
// prints a float (`2.0`, `0.015`, `1e+23`); the parser has already checked
// it is finite.
func floatText(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "0.0"
	}
	return pythonFloatRepr(f)
}

// parseAction parses a lact body into an action; every failure is an
// *InvalidConstructorError.
func parseAction(alias, body string) (Action, error) {
	c, err := ParseCall(alias, body)
	if err != nil {
		return Action{}, err
	}
	return Action{Name: alias, Function: c.Function, Arguments: c.Arguments}, nil
}

// normalizeResult returns an action result in the JSON-compatible forms
// assembly tells apart: typed slices and maps, structs and other values
// encoding/json can write are converted through JSON (objects keep the
// order json.Marshal writes); a value it cannot write is kept as it is.
func normalizeResult(v any) any {
	switch v.(type) {
	case nil, bool, string, json.Number, float64, float32, int, int64, int32, uint, uint64, uint32,
		[]any, map[string]any, *Object, *Placeholder:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	if d, err := DecodeJSON(b); err == nil {
		return d
	}
	return v
}

// shapeType returns the type a value is shaped for: a union of several
// types is shaped for its first model member, else for its first member
// (nullable wrappers are already removed by ParseTarget).
func shapeType(t *Type) *Type {
	if t == nil || t.Kind != KindUnion || len(t.Variants) == 0 {
		return t
	}
	for _, v := range t.Variants {
		if v.Kind == KindModel {
			return v
		}
	}
	return t.Variants[0]
}

func isModel(t *Type) bool { return t != nil && t.Kind == KindModel }

// refersTo reports whether v holds a reference to one of the keys of
// names.
func refersTo(v *Value, names map[string]any) bool {
	switch v.Kind {
	case ValueRef:
		_, ok := names[v.Text]
		return ok
	case ValueList:
		for i := range v.List {
			if refersTo(&v.List[i], names) {
				return true
			}
		}
	}
	return false
}
