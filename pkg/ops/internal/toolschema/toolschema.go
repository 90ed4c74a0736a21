// Package toolschema holds the tool schemas of an instruction: the tools
// the model may request, rendered into the instruction as
// {name, description, parameters} objects and handed to providers as
// native tools.
package toolschema

import (
	"encoding/json"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Names describes the selected tools, or all when selected is nil, by name
// only: {"name": n} each.
func Names(selected, all []string) []any {
	names := selected
	if names == nil {
		names = all
	}
	out := make([]any, 0, len(names))
	for _, n := range names {
		out = append(out, map[string]any{"name": n})
	}
	return out
}

// Described replaces the name-only schemas of Names with what describe
// knows of each tool: {name, description, parameters}; a tool describe
// does not return is left out.
func Described(schemas []any, describe func(names []string) []wire.ToolSpec) []any {
	names := make([]string, 0, len(schemas))
	for _, s := range schemas {
		if m, ok := s.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	out := make([]any, 0, len(names))
	for _, spec := range describe(names) {
		m := map[string]any{"name": spec.Name}
		if spec.Description != "" {
			m["description"] = spec.Description
		}
		if len(spec.Parameters) > 0 {
			var params any
			if json.Unmarshal(spec.Parameters, &params) == nil {
				m["parameters"] = params
			}
		}
		out = append(out, m)
	}
	return out
}

// Native returns the tool schemas of an instruction as the specs of a
// provider's native tools; a schema that is not an object with a name is
// left out.
func Native(schemas []any) []wire.ToolSpec {
	var out []wire.ToolSpec
	for _, s := range schemas {
		m, ok := s.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if name == "" {
			continue
		}
		spec := wire.ToolSpec{Name: name}
		spec.Description, _ = m["description"].(string)
		if p, ok := m["parameters"]; ok {
			if raw, err := json.Marshal(p); err == nil {
				spec.Parameters = raw
			}
		}
		out = append(out, spec)
	}
	return out
}
