package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaBytes bounds the size of a response_format schema.
const MaxSchemaBytes = 256 << 10

// errNoRemoteRefs refuses every $ref that is not inside the schema itself.
var errNoRemoteRefs = errors.New("only references inside the schema are allowed")

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) { return nil, errNoRemoteRefs }

// responseSchema is a compiled response_format.
type responseSchema struct {
	schema *jsonschema.Schema
}

// compileResponseSchema compiles a JSON Schema (2020-12 unless it says
// otherwise). References outside the document are refused: a request must
// never make the worker read files or the network.
func compileResponseSchema(raw []byte) (*responseSchema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("schema is %d bytes; at most %d are allowed", len(raw), MaxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	const loc = "mem:///response_format.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, err
	}
	return &responseSchema{schema: s}, nil
}

// decodeResponseFormat decodes and compiles the response_format of a
// request, which must be a JSON Schema object; absent or null gives nil.
func decodeResponseFormat(raw json.RawMessage) (map[string]any, *responseSchema, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, nil, Errorf(CodeInvalidRequest, "data.response_format must be a JSON Schema object: %v", err)
	}
	v, err := compileResponseSchema(raw)
	if err != nil {
		return nil, nil, Errorf(CodeInvalidRequest, "data.response_format is not a usable JSON Schema: %v", err)
	}
	return schema, v, nil
}

// validate checks v (decoded with encoding/json) against the schema.
func (r *responseSchema) validate(v any) error {
	return r.schema.Validate(v)
}

// shortError bounds an error message to n bytes.
func shortError(err error, n int) string {
	return Truncate(strings.Join(strings.Fields(err.Error()), " "), n)
}

func sortStrings(s []string) { sort.Strings(s) }
