package ops

import "github.com/lionbus/lionbus/pkg/ops/internal/schema"

// Names of the fields operate generates (ADR-0022 D2; see package schema).
const (
	fieldReason          = schema.FieldReason
	fieldActionRequired  = schema.FieldActionRequired
	fieldActionRequests  = schema.FieldActionRequests
	fieldActionResponses = schema.FieldActionResponses
)

// operateSchemas are the generated request and response schemas of
// operate: what the model is asked for, and what operate answers.
type operateSchemas struct {
	request, response map[string]any
}

// buildSchemas generates the schemas of p (schema.Generate); nil when
// nothing is asked for.
func buildSchemas(p *operatePlan) (*operateSchemas, error) {
	req, resp, ok, err := schema.Generate(schema.Operate{Format: p.format, Reason: p.reason, Actions: p.actions, Fields: p.fields})
	if !ok || err != nil {
		return nil, err
	}
	return &operateSchemas{request: req, response: resp}, nil
}

// compileSchema compiles a generated schema.
func compileSchema(s map[string]any) (*responseSchema, error) {
	raw, err := marshalValue(s)
	if err != nil {
		return nil, err
	}
	v, err := compileResponseSchema(raw)
	if err != nil {
		return nil, Errorf(CodeInvalidRequest, "the generated schema is not usable: %v", err)
	}
	return v, nil
}
