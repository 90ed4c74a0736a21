package ops

import (
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/internal/decode"
	"github.com/lionbus/lionbus/pkg/ops/internal/schema"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds of a schema a request brings (response_format, the schemas
// operate generates from it, tool parameters), checked before it is
// compiled: compiling deeply nested schemas takes time and memory that
// grow far faster than their size.
const (
	// MaxSchemaBytes bounds the size of a response_format schema.
	MaxSchemaBytes = schema.MaxBytes
	// MaxSchemaDepth bounds the nesting of objects and arrays in a
	// schema's JSON ([wire.MaxSchemaDepth]).
	MaxSchemaDepth = wire.MaxSchemaDepth
	// MaxSchemaNodes bounds the JSON values in a schema
	// ([wire.MaxSchemaNodes]).
	MaxSchemaNodes = wire.MaxSchemaNodes
)

// ErrSchemaTooComplex is returned (wrapped) for a schema deeper than
// MaxSchemaDepth or with more than MaxSchemaNodes values.
var ErrSchemaTooComplex = wire.ErrSchemaTooComplex

// responseSchema is a compiled response_format (or generated schema).
type responseSchema = schema.Compiled

// compileResponseSchema compiles a JSON Schema (2020-12 unless it says
// otherwise) within the schema bounds, refusing references outside the
// document; compiled schemas are kept by content (see package schema).
func compileResponseSchema(raw []byte) (*responseSchema, error) { return schema.Compile(raw) }

// decodeResponseFormat decodes and compiles the response_format of a
// request, which must be a JSON Schema object; absent or null gives nil.
func decodeResponseFormat(raw json.RawMessage) (map[string]any, *responseSchema, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	if err := schema.CheckRawDepth(raw); err != nil {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("data.response_format is not a usable JSON Schema: %v", err), Err: err}
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		if decode.IsOutOfRange(err) {
			return nil, nil, Errorf(CodeInvalidRequest, "data.response_format %s", decode.OutOfRangeMessage(err))
		}
		return nil, nil, Errorf(CodeInvalidRequest, "data.response_format must be a JSON Schema object: %v", err)
	}
	v, err := compileResponseSchema(raw)
	if err != nil {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("data.response_format is not a usable JSON Schema: %v", err), Err: err}
	}
	return doc, v, nil
}
