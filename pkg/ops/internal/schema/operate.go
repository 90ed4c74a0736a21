package schema

import (
	"maps"
	"regexp"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Names of the fields operate generates (ADR-0022 D2).
const (
	// FieldReason is the model's nullable reasoning (reason: true).
	FieldReason = "reason"
	// FieldActionRequired says whether the model asks for actions.
	FieldActionRequired = "action_required"
	// FieldActionRequests are the tool calls the model asks for.
	FieldActionRequests = "action_requests"
	// FieldActionResponses are the outcomes of those calls; only the
	// runtime fills them, so the request schema never has them.
	FieldActionResponses = "action_responses"
)

// GeneratedFields are the names field_models may not take.
var GeneratedFields = []string{FieldReason, FieldActionRequired, FieldActionRequests, FieldActionResponses}

// schemaName is the characters a generated schema title keeps.
var schemaName = regexp.MustCompile(`[^A-Za-z0-9_]`)

// Operate is what operate's schemas are generated from: the caller's
// response_format (nil for none), the reason and actions flags, and the
// named field_models.
type Operate struct {
	Format          map[string]any
	Reason, Actions bool
	Fields          map[string]map[string]any
}

// Generate generates operate's request and response schemas (ADR-0022
// D2): when the caller gave a response_format, asked for reason or
// actions, or named field_models. ok is false when none of them is asked
// for. The base is
// the caller's object schema (its properties, required list and $defs);
// reason adds a nullable Reason, actions add action_required and
// action_requests to both schemas and action_responses to the response
// schema only, field_models join by name. The
// titles are <Name>Request and <Name>Response, Name being the caller's
// title or "Operative".
func Generate(p Operate) (request, response map[string]any, ok bool, err error) {
	if p.Format == nil && !p.Reason && !p.Actions && len(p.Fields) == 0 {
		return nil, nil, false, nil
	}
	name := "Operative"
	base := map[string]any{"type": "object"}
	props := map[string]any{}
	if p.Format != nil {
		if !isObjectSchema(p.Format) {
			if !p.Reason && !p.Actions && len(p.Fields) == 0 {
				// Nothing to add: the caller's schema is used as it is.
				return p.Format, p.Format, true, nil
			}
			return nil, nil, false, wire.Errorf(wire.CodeInvalidRequest, "data.response_format must describe an object (\"type\": \"object\" or \"properties\") to take reason, actions or field_models")
		}
		base = maps.Clone(p.Format)
		if pr, ok := p.Format["properties"].(map[string]any); ok {
			props = maps.Clone(pr)
		}
		if t, ok := p.Format["title"].(string); ok {
			if t = schemaName.ReplaceAllString(t, ""); t != "" {
				name = t
			}
		}
	}
	for n, s := range p.Fields {
		if _, ok := props[n]; ok {
			return nil, nil, false, wire.Errorf(wire.CodeInvalidRequest, "data.field_models.%s is already a property of response_format", n)
		}
		props[n] = s
	}
	if p.Reason {
		props[FieldReason] = reasonSchema()
	}
	if p.Actions {
		props[FieldActionRequired] = map[string]any{
			"description": "Whether the listed action requests should be run.",
			"type":        []any{"boolean", "null"},
		}
		props[FieldActionRequests] = map[string]any{
			"description": "The tool calls to make, each {function, arguments}.",
			"type":        []any{"array", "null"},
			"items":       actionRequestSchema(),
		}
	}
	req := maps.Clone(base)
	req["type"] = "object"
	req["title"] = name + "Request"
	req["properties"] = props
	resp := maps.Clone(req)
	resp["title"] = name + "Response"
	if p.Actions {
		rprops := maps.Clone(props)
		rprops[FieldActionResponses] = map[string]any{
			"description": "The outcomes of the action requests, filled by the runtime.",
			"type":        []any{"array", "null"},
			"items":       actionResponseSchema(),
		}
		resp["properties"] = rprops
	}
	return req, resp, true, nil
}

// isObjectSchema reports whether s describes an object.
func isObjectSchema(s map[string]any) bool {
	if _, ok := s["properties"].(map[string]any); ok {
		return true
	}
	return s["type"] == "object"
}

// The generated object schemas carry a title, as pydantic writes one for a
// model: the LNDL middle shows a nested model to the model by that name
// (Specs: reason(Reason: ...)) and binds Model.field declarations to it.

func reasonSchema() map[string]any {
	return map[string]any{
		"title":       "Reason",
		"description": "Why the answer is what it is.",
		"type":        []any{"object", "null"},
		"properties": map[string]any{
			"title":            map[string]any{"type": []any{"string", "null"}},
			"content":          map[string]any{"type": []any{"string", "null"}},
			"confidence_score": map[string]any{"type": []any{"number", "null"}},
		},
	}
}

func actionRequestSchema() map[string]any {
	return map[string]any{
		"title": "ActionRequest",
		"type":  "object",
		"properties": map[string]any{
			"function":  map[string]any{"type": "string", "minLength": 1, "description": "The tool name."},
			"arguments": map[string]any{"type": []any{"object", "null"}, "description": "The named arguments."},
		},
		"required": []any{"function"},
	}
}

func actionResponseSchema() map[string]any {
	return map[string]any{
		"title": "ActionResponse",
		"type":  "object",
		"properties": map[string]any{
			"id":        map[string]any{"type": "string"},
			"function":  map[string]any{"type": "string"},
			"arguments": map[string]any{"type": "object"},
			"output":    map[string]any{},
			"error": map[string]any{
				"type":     "object",
				"required": []any{"code", "message"},
				"properties": map[string]any{
					"code":    map[string]any{"type": "string"},
					"message": map[string]any{"type": "string"},
				},
			},
		},
		"required": []any{"function", "arguments"},
	}
}
