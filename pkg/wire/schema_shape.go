package wire

import (
	"errors"
	"fmt"
)

// Bounds of a JSON Schema a request or a tool brings (response_format,
// the schemas operate generates from it, tool parameters), checked before
// it is compiled: compiling deeply nested schemas takes time and memory
// that grow far faster than their size.
const (
	// MaxSchemaDepth bounds the nesting of objects and arrays in a
	// schema's JSON.
	MaxSchemaDepth = 64
	// MaxSchemaNodes bounds the JSON values (objects, arrays, strings,
	// numbers, ...) in a schema.
	MaxSchemaNodes = 20000
)

// ErrSchemaTooComplex is returned (wrapped) for a schema deeper than
// MaxSchemaDepth or with more than MaxSchemaNodes values.
var ErrSchemaTooComplex = errors.New("schema too complex")

// CheckSchemaShape checks that doc, a decoded JSON value, nests at most
// MaxSchemaDepth objects and arrays deep and holds at most MaxSchemaNodes
// values. It walks doc without recursion, in time linear in its size.
func CheckSchemaShape(doc any) error {
	type item struct {
		v     any
		depth int
	}
	stack := []item{{doc, 0}}
	nodes := 0
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nodes++
		if nodes > MaxSchemaNodes {
			return fmt.Errorf("%w: more than %d values", ErrSchemaTooComplex, MaxSchemaNodes)
		}
		switch v := it.v.(type) {
		case map[string]any:
			if it.depth >= MaxSchemaDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrSchemaTooComplex, MaxSchemaDepth)
			}
			for _, c := range v {
				stack = append(stack, item{c, it.depth + 1})
			}
		case []any:
			if it.depth >= MaxSchemaDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrSchemaTooComplex, MaxSchemaDepth)
			}
			for _, c := range v {
				stack = append(stack, item{c, it.depth + 1})
			}
		}
	}
	return nil
}
