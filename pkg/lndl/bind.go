package lndl

import "strings"

// decls indexes a program's declarations by alias.
type decls struct {
	prog *Program
	// index maps an alias to i >= 0 for Lvars[i], or to -i-1 for
	// Lacts[i]. The first declaration of an alias wins (the parser
	// rejects duplicates anyway). It is built only for programs with
	// more than smallDecls declarations; smaller ones are scanned.
	index map[string]int
	// contents holds the lvar bodies as interface values, so a body is
	// boxed once however often it is referenced and assembled. decls is
	// read-only once built.
	contents []any
}

// smallDecls is the number of declarations up to which lookup scans the
// declarations instead of building a map.
const smallDecls = 24

func newDecls(p *Program) *decls {
	d := new(decls)
	d.init(p)
	return d
}

// init sets d to the decls of p.
func (d *decls) init(p *Program) {
	d.initWith(p, nil)
}

// initWith sets d to the decls of p, boxing the lvar bodies into buf's
// storage when it has the room.
func (d *decls) initWith(p *Program, buf []any) {
	d.setIndex(p)
	d.contents = makeRoom(buf, len(p.Lvars))[:len(p.Lvars)]
	for i := range p.Lvars {
		d.contents[i] = p.Lvars[i].Content
	}
}

// indexDecls returns the decls of p without the boxed contents: enough to
// look aliases up and bind them.
func indexDecls(p *Program) *decls {
	d := new(decls)
	d.setIndex(p)
	return d
}

// setIndex sets d to the decls of p without the boxed contents.
func (d *decls) setIndex(p *Program) {
	*d = decls{prog: p}
	if len(p.Lvars)+len(p.Lacts) <= smallDecls {
		return
	}
	if p.aliases != nil && len(p.aliases) == len(p.Lvars)+len(p.Lacts) {
		d.index = p.aliases
		return
	}
	d.index = indexAliases(p)
}

// indexAliases maps every alias of p to its declaration (i for Lvars[i],
// -i-1 for Lacts[i]); the first declaration of an alias wins.
func indexAliases(p *Program) map[string]int {
	index := make(map[string]int, len(p.Lvars)+len(p.Lacts))
	for i := range p.Lvars {
		if _, dup := index[p.Lvars[i].Alias]; !dup {
			index[p.Lvars[i].Alias] = i
		}
	}
	for i := range p.Lacts {
		if _, dup := index[p.Lacts[i].Alias]; !dup {
			index[p.Lacts[i].Alias] = -i - 1
		}
	}
	return index
}

// lookup returns the index of the declaration of name, as in index.
func (d *decls) lookup(name string) (int, bool) {
	if d.index != nil {
		i, ok := d.index[name]
		return i, ok
	}
	for i := range d.prog.Lvars {
		if sameName(d.prog.Lvars[i].Alias, name) {
			return i, true
		}
	}
	for i := range d.prog.Lacts {
		if sameName(d.prog.Lacts[i].Alias, name) {
			return -i - 1, true
		}
	}
	return 0, false
}

// headAt returns the head of the declaration at index i (as in index).
func (d *decls) headAt(i int32) *Head {
	if i >= 0 {
		return &d.prog.Lvars[i].Head
	}
	return &d.prog.Lacts[-i-1].Head
}

// head returns the head of the declaration of name.
func (d *decls) head(name string) (Head, bool) {
	i, ok := d.lookup(name)
	if !ok {
		return Head{}, false
	}
	return *d.headAt(int32(i)), true
}

// binder binds the names of OUT shortcuts and anonymous groups to target
// fields (docs/lndl.md#binding, LNDL-D4).
type binder struct {
	d      *decls
	target *Target
}

// bind returns the spec (OUT key) a shortcut or group named name fills
// (docs/lndl.md#binding). It is the one implementation of the
// binding rules; [Program.DefaultBinding] is bind without a target.
//
// An alias declared `M.f` binds to f, one declared `hint alias` to hint,
// and any other name — undeclared, or a raw alias — to its first
// dot-separated segment (`note.x` → note; "" for a name starting with a
// dot). With a target, an alias declared `M.f` binds instead to M if M is
// a target field, else to the only target field whose model (or list
// element model) is named M ignoring case, else to f (LNDL-D4).
func (b *binder) bind(name string) string {
	h, ok := b.d.head(name)
	if !ok {
		return firstSegment(name)
	}
	if h.Namespaced() && b.target != nil && b.target.Model != nil {
		if b.target.Field(h.Model) != nil {
			return h.Model
		}
		if f := b.uniqueModelField(h.Model); f != "" {
			return f
		}
	}
	if s := h.Spec(); s != "" {
		return s
	}
	return firstSegment(name)
}

// uniqueModelField returns the only target field whose type, or list
// element type, is a model named model ignoring case; "" when none or
// several.
func (b *binder) uniqueModelField(model string) string {
	found := ""
	for _, f := range b.target.Model.Fields {
		n := modelName(f.Type)
		if n == "" || !strings.EqualFold(n, model) {
			continue
		}
		if found != "" {
			return ""
		}
		found = f.Name
	}
	return found
}

// modelName returns the name of the model t is, or is a list of; "" for
// other types.
func modelName(t *Type) string {
	t = shapeType(t)
	if t == nil {
		return ""
	}
	if t.Kind == KindList {
		t = shapeType(t.Elem)
	}
	if t != nil && t.Kind == KindModel {
		return t.Name
	}
	return ""
}
