package prompt

import (
	"sort"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
)

// renderInstruction renders an instruction's content as readable text:
// the sections Guidance, Instruction, Context, Tools, ResponseSchema and
// ResponseFormat, in that order, each "Name:" followed by its body, separated
// by blank lines; empty sections are left out. Strings are written verbatim,
// other values as indented JSON (object keys sorted, so the text is
// deterministic). extra is appended to the Context. Tools and the response
// schema are rendered only when full is true (the current instruction).
//
// When the content has plain_content it is sent verbatim instead.
func renderInstruction(c map[string]any, extra []any, full bool) string {
	if pc, ok := c[history.KeyPlainContent].(string); ok && pc != "" {
		return pc
	}
	var sections []string
	add := func(name, body string) {
		body = strings.TrimRight(body, " \n\t")
		if body != "" {
			sections = append(sections, name+":\n"+body)
		}
	}
	add("Guidance", renderValue(c[history.KeyGuidance]))
	add("Instruction", renderValue(c[history.KeyInstruction]))
	ctx := append(jsonval.AsList(c[history.KeyContext]), extra...)
	add("Context", renderList(ctx))
	if full {
		add("Tools", renderList(jsonval.AsList(c[history.KeyToolSchemas])))
		if schema, ok := c[history.KeyResponseFormat].(map[string]any); ok && len(schema) > 0 {
			add("ResponseSchema", jsonval.Indent(schema))
			add("ResponseFormat", "Answer with one JSON value that satisfies ResponseSchema, "+
				"inside a ```json code block, like this example:\n```json\n"+
				jsonval.Indent(schemaExample(schema, 0))+"\n```")
		}
	}
	return strings.Join(sections, "\n\n")
}

// renderValue writes a string verbatim and anything else as indented JSON.
func renderValue(v any) string {
	if jsonval.IsEmpty(v) {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return jsonval.Indent(v)
}

// renderList writes one "- item" per entry; multi-line items are indented.
func renderList(items []any) string {
	var b strings.Builder
	for _, it := range items {
		if jsonval.IsEmpty(it) {
			continue
		}
		text := renderValue(it)
		b.WriteString("- ")
		b.WriteString(strings.ReplaceAll(text, "\n", "\n  "))
		b.WriteString("\n")
	}
	return b.String()
}

// InstructionText is the text form of an instruction's "instruction" field
// (a string verbatim, any other value as compact JSON), or its
// plain_content: what a provider that takes one text is given.
func InstructionText(c map[string]any) string {
	v := c[history.KeyInstruction]
	if jsonval.IsEmpty(v) {
		s, _ := c[history.KeyPlainContent].(string)
		return s
	}
	return jsonval.Text(v)
}

// maxExampleDepth bounds the nesting schemaExample follows.
const maxExampleDepth = 8

// schemaExample builds an example value for a JSON Schema: const, then the
// first of examples or enum, then default, then a placeholder by type
// ("<string>" or the description, 0, true, null), following properties,
// items and the first anyOf/oneOf/allOf branch. $ref is not followed.
func schemaExample(s map[string]any, depth int) any {
	if depth > maxExampleDepth || s == nil {
		return nil
	}
	if v, ok := s["const"]; ok {
		return v
	}
	if ex, ok := s["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	if en, ok := s["enum"].([]any); ok && len(en) > 0 {
		return en[0]
	}
	if v, ok := s["default"]; ok {
		return v
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, a := range alts {
				if am, ok := a.(map[string]any); ok && am["type"] != "null" {
					return schemaExample(am, depth+1)
				}
			}
		}
	}
	typ := s["type"]
	if list, ok := typ.([]any); ok {
		typ = nil
		for _, t := range list {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == nil {
		if _, ok := s["properties"]; ok {
			typ = "object"
		} else if _, ok := s["items"]; ok {
			typ = "array"
		}
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			pm, _ := props[k].(map[string]any)
			out[k] = schemaExample(pm, depth+1)
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		if items == nil {
			return []any{}
		}
		return []any{schemaExample(items, depth+1)}
	case "string":
		if d, ok := s["description"].(string); ok && d != "" && len(d) <= 80 {
			return "<" + d + ">"
		}
		return "<string>"
	case "integer", "number":
		return 0
	case "boolean":
		return true
	}
	return nil
}
