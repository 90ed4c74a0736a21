package ops

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds of a schema a request brings (response_format, the schemas
// operate generates from it, tool parameters), checked before it is
// compiled: compiling deeply nested schemas takes time and memory that
// grow far faster than their size.
const (
	// MaxSchemaBytes bounds the size of a response_format schema.
	MaxSchemaBytes = 256 << 10
	// MaxSchemaDepth bounds the nesting of objects and arrays in a
	// schema's JSON ([wire.MaxSchemaDepth]).
	MaxSchemaDepth = wire.MaxSchemaDepth
	// MaxSchemaNodes bounds the JSON values in a schema
	// ([wire.MaxSchemaNodes]).
	MaxSchemaNodes = wire.MaxSchemaNodes
	// schemaCacheSize is how many compiled response schemas an engine
	// process keeps, by content.
	schemaCacheSize = 256
)

// ErrSchemaTooComplex is returned (wrapped) for a schema deeper than
// MaxSchemaDepth or with more than MaxSchemaNodes values.
var ErrSchemaTooComplex = wire.ErrSchemaTooComplex

// CheckSchemaShape checks that doc, a decoded JSON value, nests at most
// MaxSchemaDepth objects and arrays deep and holds at most MaxSchemaNodes
// values. It walks doc without recursion, in time linear in its size.
func CheckSchemaShape(doc any) error {
	return checkShape(doc)
}

// checkRawDepth refuses JSON text nested deeper than MaxSchemaDepth objects
// and arrays, by a scan of its bytes, before anything decodes it: decoding
// a 9,000-deep schema allocates megabytes just to be refused. It agrees
// with CheckSchemaShape's depth rule on valid JSON (FuzzCheckRawDepth); it
// does not validate the text.
func checkRawDepth(raw []byte) error {
	depth, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > MaxSchemaDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrSchemaTooComplex, MaxSchemaDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

func checkShape(doc any) error { return wire.CheckSchemaShape(doc) }

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
//
// Schemas are checked against MaxSchemaBytes, MaxSchemaDepth and
// MaxSchemaNodes before they are compiled, and compiled ones are kept by
// content (the last schemaCacheSize), so a schema sent with every request
// is compiled once.
func compileResponseSchema(raw []byte) (*responseSchema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("schema is %d bytes; at most %d are allowed", len(raw), MaxSchemaBytes)
	}
	key := sha256.Sum256(raw)
	if s, ok := schemaCache.get(key); ok {
		return s, nil
	}
	if err := checkRawDepth(raw); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if err := CheckSchemaShape(doc); err != nil {
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
	rs := &responseSchema{schema: s}
	schemaCache.put(key, rs)
	return rs, nil
}

// schemaCache holds compiled response schemas by the SHA-256 of their
// text. A compiled schema is immutable and safe for concurrent use.
var schemaCache = newCompiledSchemas(schemaCacheSize)

type compiledSchemas struct {
	mu    sync.Mutex
	max   int
	m     map[[32]byte]*list.Element
	order *list.List // of schemaEntry, front: most recently used
}

type schemaEntry struct {
	key [32]byte
	s   *responseSchema
}

func newCompiledSchemas(max int) *compiledSchemas {
	return &compiledSchemas{max: max, m: map[[32]byte]*list.Element{}, order: list.New()}
}

func (c *compiledSchemas) get(key [32]byte) (*responseSchema, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(schemaEntry).s, true
}

func (c *compiledSchemas) put(key [32]byte, s *responseSchema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.m[key] = c.order.PushFront(schemaEntry{key, s})
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(schemaEntry)
		delete(c.m, old.key)
	}
}

// decodeResponseFormat decodes and compiles the response_format of a
// request, which must be a JSON Schema object; absent or null gives nil.
func decodeResponseFormat(raw json.RawMessage) (map[string]any, *responseSchema, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	if err := checkRawDepth(raw); err != nil {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("data.response_format is not a usable JSON Schema: %v", err), Err: err}
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		if isOutOfRange(err) {
			return nil, nil, Errorf(CodeInvalidRequest, "data.response_format %s", outOfRangeMessage(err))
		}
		return nil, nil, Errorf(CodeInvalidRequest, "data.response_format must be a JSON Schema object: %v", err)
	}
	v, err := compileResponseSchema(raw)
	if err != nil {
		return nil, nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("data.response_format is not a usable JSON Schema: %v", err), Err: err}
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
