package lndl

import "strings"

// Render returns the line that tells the model the target's fields,
// `Specs: name(type), ...`, in declaration order (docs/lndl.md#target-rendering), or
// "" for no target or a model without fields. Types read `str`, `int`,
// `float`, `bool`, `Any`, an enum's name, `list[T]`, `dict[str, V]`, a
// nested model as `Name: f1, f2` and a list of models as
// `list[Name: f1, f2]` (field names only, one level). A field with a
// default is followed by `, optional`.
func Render(t *Target) string {
	s, _ := RenderSpecs(t)
	return s
}

// RenderSpecs is [Render] that also reports whether there is a line.
func RenderSpecs(t *Target) (string, bool) {
	if t == nil || t.Model == nil || len(t.Model.Fields) == 0 {
		return "", false
	}
	var b strings.Builder
	b.WriteString("Specs: ")
	for i, f := range t.Model.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name)
		b.WriteByte('(')
		renderType(&b, f.Type, 0)
		if f.HasDefault {
			b.WriteString(", optional")
		}
		b.WriteByte(')')
	}
	return b.String(), true
}

// renderType writes a type name. Models print their field names only, so
// recursion stops at the first model; depth bounds list/dict nesting.
func renderType(b *strings.Builder, t *Type, depth int) {
	if t == nil || depth > MaxTypeDepth {
		b.WriteString("Any")
		return
	}
	switch t.Kind {
	case KindString:
		b.WriteString("str")
	case KindInt:
		b.WriteString("int")
	case KindFloat:
		b.WriteString("float")
	case KindBool:
		b.WriteString("bool")
	case KindNull:
		b.WriteString("None")
	case KindEnum:
		if t.Name != "" {
			b.WriteString(t.Name)
		} else {
			renderType(b, &Type{Kind: t.Base}, depth+1)
		}
	case KindList:
		b.WriteString("list[")
		renderType(b, t.Elem, depth+1)
		b.WriteByte(']')
	case KindDict:
		b.WriteString("dict[str, ")
		renderType(b, t.Elem, depth+1)
		b.WriteByte(']')
	case KindModel:
		b.WriteString(t.Name)
		b.WriteString(": ")
		if t.Model == nil {
			break
		}
		for i, f := range t.Model.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
		}
	case KindUnion:
		for i, v := range t.Variants {
			if i > 0 {
				b.WriteString(" | ")
			}
			renderType(b, v, depth+1)
		}
		if t.Nullable {
			b.WriteString(" | None")
		}
	default:
		b.WriteString("Any")
	}
}
