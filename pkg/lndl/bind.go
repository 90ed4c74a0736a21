package lndl

import "strings"

// binder binds the names of OUT shortcuts and anonymous groups to target
// fields (LNDL.md section 4, LNDL-D4).
type binder struct {
	heads  map[string]Head // declared aliases, lvars and lacts
	target *Target
}

func newBinder(p *Program, t *Target) *binder {
	b := &binder{heads: make(map[string]Head, len(p.Lvars)+len(p.Lacts)), target: t}
	for i := range p.Lvars {
		if _, dup := b.heads[p.Lvars[i].Alias]; !dup {
			b.heads[p.Lvars[i].Alias] = p.Lvars[i].Head
		}
	}
	for i := range p.Lacts {
		if _, dup := b.heads[p.Lacts[i].Alias]; !dup {
			b.heads[p.Lacts[i].Alias] = p.Lacts[i].Head
		}
	}
	return b
}

// bind returns the spec (OUT key) a shortcut or group named name fills.
//
// Without a target: an alias declared `M.f` binds to f, one declared
// `hint alias` to hint, any other name to its first dot-separated segment.
// With a target, an alias declared `M.f` binds to M if M is a target
// field, else to the only target field whose model (or list element
// model) is named M ignoring case, else to f; `hint alias` binds to hint.
func (b *binder) bind(name string) string {
	h, ok := b.heads[name]
	if !ok {
		if i := strings.IndexByte(name, '.'); i >= 0 {
			return name[:i]
		}
		return name
	}
	switch {
	case h.Namespaced():
		if b.target != nil {
			if b.target.Field(h.Model) != nil {
				return h.Model
			}
			if f := b.uniqueModelField(h.Model); f != "" {
				return f
			}
		}
		return h.Field
	case h.Hint != "":
		return h.Hint
	}
	return name
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
	if t == nil {
		return ""
	}
	if t.Kind == KindList {
		t = t.Elem
	}
	if t != nil && t.Kind == KindModel {
		return t.Name
	}
	return ""
}
