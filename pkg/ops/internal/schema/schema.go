// Package schema compiles the JSON Schemas a request brings
// (response_format, the schemas operate generates from it) within bounds,
// refusing every reference outside the schema, and keeps the compiled ones
// by content; it also generates operate's request and response schemas
// ([Generate]).
package schema

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds of a schema, checked before it is compiled: compiling deeply
// nested schemas takes time and memory that grow far faster than their
// size.
const (
	// MaxBytes bounds the size of a schema's text.
	MaxBytes = 256 << 10
	// MaxDepth bounds the nesting of objects and arrays in a schema's
	// JSON ([wire.MaxSchemaDepth]).
	MaxDepth = wire.MaxSchemaDepth
	// MaxNodes bounds the JSON values in a schema ([wire.MaxSchemaNodes]).
	MaxNodes = wire.MaxSchemaNodes
	// cacheSize is how many compiled schemas a process keeps, by content.
	cacheSize = 256
)

// ErrTooComplex is returned (wrapped) for a schema deeper than MaxDepth
// or with more than MaxNodes values ([wire.ErrSchemaTooComplex]).
var ErrTooComplex = wire.ErrSchemaTooComplex

// CheckRawDepth refuses JSON text nested deeper than MaxDepth objects
// and arrays, by a scan of its bytes, before anything decodes it: decoding
// a 9,000-deep schema allocates megabytes just to be refused. It agrees
// with wire.CheckSchemaShape's depth rule on valid JSON (FuzzCheckRawDepth); it
// does not validate the text.
func CheckRawDepth(raw []byte) error {
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
			if depth++; depth > MaxDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrTooComplex, MaxDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// errNoRemoteRefs refuses every $ref that is not inside the schema itself.
var errNoRemoteRefs = errors.New("only references inside the schema are allowed")

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) { return nil, errNoRemoteRefs }

// Compiled is a compiled schema. It is immutable and safe for
// concurrent use.
type Compiled struct {
	schema *jsonschema.Schema
}

// Compile compiles a JSON Schema (2020-12 unless it says
// otherwise). References outside the document are refused: a request must
// never make the worker read files or the network.
//
// Schemas are checked against MaxBytes, MaxDepth and
// MaxNodes before they are compiled, and compiled ones are kept by
// content (the last cacheSize), so a schema sent with every request
// is compiled once.
func Compile(raw []byte) (*Compiled, error) {
	if len(raw) > MaxBytes {
		return nil, fmt.Errorf("schema is %d bytes; at most %d are allowed", len(raw), MaxBytes)
	}
	key := sha256.Sum256(raw)
	if s, ok := schemaCache.get(key); ok {
		return s, nil
	}
	if err := CheckRawDepth(raw); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if err := wire.CheckSchemaShape(doc); err != nil {
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
	rs := &Compiled{schema: s}
	schemaCache.put(key, rs)
	return rs, nil
}

// schemaCache holds compiled response schemas by the SHA-256 of their
// text. A compiled schema is immutable and safe for concurrent use.
var schemaCache = newCompiledSchemas(cacheSize)

type compiledSchemas struct {
	mu    sync.Mutex
	max   int
	m     map[[32]byte]*list.Element
	order *list.List // of schemaEntry, front: most recently used
}

type schemaEntry struct {
	key [32]byte
	s   *Compiled
}

func newCompiledSchemas(max int) *compiledSchemas {
	return &compiledSchemas{max: max, m: map[[32]byte]*list.Element{}, order: list.New()}
}

func (c *compiledSchemas) get(key [32]byte) (*Compiled, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(schemaEntry).s, true
}

func (c *compiledSchemas) put(key [32]byte, s *Compiled) {
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

// Validate checks v (decoded with encoding/json) against the schema.
func (r *Compiled) Validate(v any) error {
	return r.schema.Validate(v)
}
