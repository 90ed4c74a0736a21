package lndl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"
)

// JSON-compatible values in this package are nil, bool, string,
// json.Number, []any, *Object (an object that keeps key order) and, where
// they come from callers (action results, notes), map[string]any, float64,
// int and the other Go numbers that encoding/json writes.

// Object is a JSON object that keeps its keys in insertion order. Setting
// a key that is already present replaces its value and keeps its position.
// json.Marshal writes the keys in that order. The zero value is an empty
// object ready to use.
type Object struct {
	pairs []objectPair
	index map[string]int // built once the object grows past objectIndexMin keys
}

type objectPair struct {
	key string
	val any
}

// objectIndexMin is the number of keys from which an Object keeps a map
// index instead of scanning its keys.
const objectIndexMin = 12

// sized is an Object with its room for keys, A an array of pairs, so that
// both take one allocation.
type sized[A any] struct {
	o Object
	b A
}

// smallObject is an object with room for smallObjectKeys keys.
type smallObject = sized[[smallObjectKeys]objectPair]

// smallObjectKeys is the room of a smallObject.
const smallObjectKeys = 4

// sizedObjects[n] returns an empty object with room for n keys, made in
// one allocation of the size class that fits them.
var sizedObjects = [...]func() *Object{
	1:  func() *Object { s := new(sized[[1]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	2:  func() *Object { s := new(sized[[2]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	3:  func() *Object { s := new(sized[[3]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	4:  func() *Object { s := new(sized[[4]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	5:  func() *Object { s := new(sized[[5]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	6:  func() *Object { s := new(sized[[6]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	7:  func() *Object { s := new(sized[[7]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	8:  func() *Object { s := new(sized[[8]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	9:  func() *Object { s := new(sized[[9]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	10: func() *Object { s := new(sized[[10]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	11: func() *Object { s := new(sized[[11]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	12: func() *Object { s := new(sized[[12]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	13: func() *Object { s := new(sized[[13]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	14: func() *Object { s := new(sized[[14]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	15: func() *Object { s := new(sized[[15]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
	16: func() *Object { s := new(sized[[16]objectPair]); s.o.pairs = s.b[:0]; return &s.o },
}

// NewObject returns an empty object with room for n keys.
func NewObject(n int) *Object {
	switch {
	case n <= 0:
		return &Object{}
	case n < len(sizedObjects):
		return sizedObjects[n]()
	}
	return &Object{pairs: make([]objectPair, 0, n)}
}

// setNew appends key, which the caller knows is not present, with v.
func (o *Object) setNew(key string, v any) {
	o.pairs = append(o.pairs, objectPair{key, v})
	if o.index != nil {
		o.index[key] = len(o.pairs) - 1
	} else if len(o.pairs) > objectIndexMin {
		o.buildIndex()
	}
}

// buildIndex indexes the keys.
func (o *Object) buildIndex() {
	o.index = make(map[string]int, len(o.pairs)*2)
	for i := range o.pairs {
		o.index[o.pairs[i].key] = i
	}
}

func (o *Object) find(key string) int {
	if o.index != nil {
		if i, ok := o.index[key]; ok {
			return i
		}
		return -1
	}
	for i := range o.pairs {
		if sameName(o.pairs[i].key, key) {
			return i
		}
	}
	return -1
}

// Set sets key to v. A new key goes last; an existing one keeps its place.
func (o *Object) Set(key string, v any) {
	if i := o.find(key); i >= 0 {
		o.pairs[i].val = v
		return
	}
	o.setNew(key, v)
}

// Get returns the value of key and whether the key is present.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	if i := o.find(key); i >= 0 {
		return o.pairs[i].val, true
	}
	return nil, false
}

// Has reports whether key is present.
func (o *Object) Has(key string) bool {
	_, ok := o.Get(key)
	return ok
}

// Len returns the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.pairs)
}

// Keys returns a new slice of the keys in order.
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	keys := make([]string, len(o.pairs))
	for i := range o.pairs {
		keys[i] = o.pairs[i].key
	}
	return keys
}

// Range calls f for every key in order until f returns false.
func (o *Object) Range(f func(key string, v any) bool) {
	if o == nil {
		return
	}
	for i := range o.pairs {
		if !f(o.pairs[i].key, o.pairs[i].val) {
			return
		}
	}
}

// Map returns the object as a plain map (values are not converted).
func (o *Object) Map() map[string]any {
	m := make(map[string]any, o.Len())
	o.Range(func(k string, v any) bool { m[k] = v; return true })
	return m
}

// MarshalJSON writes the object with its keys in insertion order.
func (o *Object) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i := range o.pairs {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := json.Marshal(o.pairs[i].key)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := json.Marshal(o.pairs[i].val)
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON decodes a JSON object keeping key order; nested objects
// become *Object and numbers json.Number (see [DecodeJSON]).
func (o *Object) UnmarshalJSON(data []byte) error {
	v, err := DecodeJSON(data)
	if err != nil {
		return err
	}
	obj, ok := v.(*Object)
	if !ok {
		return fmt.Errorf("lndl: JSON value is not an object")
	}
	*o = *obj
	return nil
}

// MaxJSONDepth bounds the nesting of arrays and objects that [DecodeJSON]
// accepts.
const MaxJSONDepth = 256

// ErrJSONTooDeep is returned by [DecodeJSON] for input nested deeper than
// [MaxJSONDepth].
var ErrJSONTooDeep = errors.New("lndl: JSON nested too deep")

// DecodeJSON decodes one JSON value, keeping the key order of objects: it
// returns nil, bool, string, json.Number, []any or *Object. Input nested
// deeper than MaxJSONDepth is rejected, and so is trailing data.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("lndl: trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	return decodeFrom(dec, tok, depth)
}

func decodeFrom(dec *json.Decoder, tok json.Token, depth int) (any, error) {
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth >= MaxJSONDepth {
		return nil, ErrJSONTooDeep
	}
	switch d {
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return arr, nil
	case '{':
		obj := NewObject(4)
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, ok := kt.(string)
			if !ok {
				return nil, fmt.Errorf("lndl: JSON object key is not a string")
			}
			v, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj.Set(key, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return obj, nil
	}
	return nil, fmt.Errorf("lndl: unexpected JSON delimiter %q", d)
}

// resultJSONText writes v as compact JSON text the way an object or array
// action result is turned into a string field's value (LNDL-D7): no
// spaces, object keys sorted by code point, non-ASCII characters and
// `<>&` written as they are, control characters escaped. Nesting deeper
// than MaxJSONDepth is cut off with an error.
func resultJSONText(v any) (string, error) {
	var buf bytes.Buffer
	if err := writeCompact(&buf, v, 0); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func writeCompact(buf *bytes.Buffer, v any, depth int) error {
	if depth > MaxJSONDepth {
		return ErrJSONTooDeep
	}
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case string:
		writeJSONString(buf, x)
	case json.Number:
		buf.WriteString(string(x))
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCompact(buf, e, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case *Object:
		return writeSortedObject(buf, x.Keys(), func(k string) any { e, _ := x.Get(k); return e }, depth)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		return writeSortedObject(buf, keys, func(k string) any { return x[k] }, depth)
	case float64:
		buf.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			return err
		}
		// Re-decode so nested maps get sorted keys and unescaped text.
		dv, err := DecodeJSON(c.Bytes())
		if err != nil {
			return err
		}
		if _, isObj := dv.(*Object); isObj {
			return writeCompact(buf, dv, depth)
		}
		if _, isArr := dv.([]any); isArr {
			return writeCompact(buf, dv, depth)
		}
		if s, isStr := dv.(string); isStr {
			writeJSONString(buf, s)
			return nil
		}
		buf.Write(c.Bytes())
	}
	return nil
}

// writeSortedObject writes an object whose keys are keys (sorted here)
// and values get(key), as writeCompact does.
func writeSortedObject(buf *bytes.Buffer, keys []string, get func(string) any, depth int) error {
	sort.Strings(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeJSONString(buf, k)
		buf.WriteByte(':')
		if err := writeCompact(buf, get(k), depth+1); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

const hexDigits = "0123456789abcdef"

// writeJSONString writes s as a JSON string, escaping only what JSON
// requires: the quote, the backslash and control characters.
func writeJSONString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				buf.WriteString(`\"`)
			case c == '\\':
				buf.WriteString(`\\`)
			case c == '\n':
				buf.WriteString(`\n`)
			case c == '\r':
				buf.WriteString(`\r`)
			case c == '\t':
				buf.WriteString(`\t`)
			case c == '\b':
				buf.WriteString(`\b`)
			case c == '\f':
				buf.WriteString(`\f`)
			case c < 0x20:
				buf.WriteString(`\u00`)
				buf.WriteByte(hexDigits[c>>4])
				buf.WriteByte(hexDigits[c&0xf])
			default:
				buf.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(`\ufffd`)
		} else {
			buf.WriteString(s[i : i+size])
		}
		i += size
	}
	buf.WriteByte('"')
}
