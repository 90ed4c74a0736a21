// Package schemas holds the JSON Schemas (draft 2020-12) of the data of every
// lionbus event, embedded in the binary and compiled once.
//
// A schema file is named after the event type whose data it describes:
// lionbus.communicate.request.json describes the data of a
// lionbus.communicate.request event. One file is not named after a type:
// op.request.json describes the data of a request for a named operation,
// lionbus.op.NAME.request, for every NAME without a schema file of its own.
//
// Schemas may refer to each other by relative file name
// ("$ref": "lionbus.common.json#/$defs/x"); nothing is loaded from the
// network or the file system.
package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed *.json
var files embed.FS

// baseURL is the URL each embedded file is registered under; relative
// references between files resolve against it.
const baseURL = "https://lionbus.github.io/schemas/"

// opRequest is the file of the generic named-operation request schema.
const opRequest = "op.request"

// ErrUnknownType is returned by [Validate] for an event type without a schema.
var ErrUnknownType = errors.New("schemas: no schema for event type")

// ErrInvalid is matched (errors.Is) by every *ValidationError.
var ErrInvalid = errors.New("schemas: data does not match its schema")

// ValidationError says where and why data does not match its schema.
type ValidationError struct {
	// Type is the event type whose schema was applied.
	Type string
	// Pointer is the JSON pointer (RFC 6901) of the offending value in the
	// data; "" is the whole document.
	Pointer string
	// Reason says what is wrong with it, e.g. "missing property 'instruction'".
	Reason string
	// Err is the validator's full report, or a JSON syntax error.
	Err error
}

// Error returns "schemas: <type> data at <pointer>: <reason>".
func (e *ValidationError) Error() string {
	ptr := e.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return fmt.Sprintf("schemas: %s data at %s: %s", e.Type, ptr, e.Reason)
}

// Unwrap returns the validator's report.
func (e *ValidationError) Unwrap() error { return e.Err }

// Where returns the JSON pointer of the offending value and what is wrong
// with it (what a protocol.Codec quotes in its invalid_data answer).
func (e *ValidationError) Where() (pointer, reason string) { return e.Pointer, e.Reason }

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

type compiled struct {
	schemas map[string]*jsonschema.Schema // by file name without ".json"
	raw     map[string][]byte
	types   []string
}

var load = sync.OnceValues(compileAll)

// compileAll compiles every embedded schema.
func compileAll() (*compiled, error) {
	names, err := fs.Glob(files, "*.json")
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	out := &compiled{schemas: map[string]*jsonschema.Schema{}, raw: map[string][]byte{}}
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", name, err)
		}
		if err := c.AddResource(baseURL+name, doc); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", name, err)
		}
		out.raw[strings.TrimSuffix(name, ".json")] = b
	}
	for _, name := range names {
		sch, err := c.Compile(baseURL + name)
		if err != nil {
			return nil, fmt.Errorf("schemas: compile %s: %w", name, err)
		}
		typ := strings.TrimSuffix(name, ".json")
		out.schemas[typ] = sch
		if strings.HasPrefix(typ, "lionbus.") {
			out.types = append(out.types, typ)
		}
	}
	slices.Sort(out.types)
	return out, nil
}

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schemas: external reference %q is not allowed", url)
}

// Compile compiles every embedded schema (once; later calls return the
// first result). Validate, Has and Types do it on first use; calling Compile
// at start-up surfaces a broken schema early.
func Compile() error {
	_, err := load()
	return err
}

// lookup returns the schema name used for eventType.
func (c *compiled) lookup(eventType string) (string, bool) {
	if _, ok := c.schemas[eventType]; ok && strings.HasPrefix(eventType, "lionbus.") {
		return eventType, true
	}
	if name, ok := strings.CutPrefix(eventType, "lionbus.op."); ok {
		if name, ok = strings.CutSuffix(name, ".request"); ok && name != "" && !strings.Contains(name, ".") {
			return opRequest, true
		}
	}
	return "", false
}

// Validate checks data (JSON) against the schema of eventType. It returns
// nil when data is valid, a *ValidationError (matching ErrInvalid) when it
// is not or is not JSON, ErrUnknownType (wrapped) when eventType has no
// schema, and the compile error if an embedded schema is broken.
//
// Requests for named operations, lionbus.op.NAME.request, use
// lionbus.op.NAME.request.json when present, else op.request.json.
func Validate(eventType string, data []byte) error {
	c, err := load()
	if err != nil {
		return err
	}
	name, ok := c.lookup(eventType)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownType, eventType)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &ValidationError{Type: eventType, Reason: "not valid JSON: " + err.Error(), Err: err}
	}
	err = c.schemas[name].Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Type: eventType, Reason: err.Error(), Err: err}
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	return &ValidationError{
		Type:    eventType,
		Pointer: pointer(leaf.InstanceLocation),
		Reason:  leaf.ErrorKind.LocalizedString(printer),
		Err:     ve,
	}
}

var printer = message.NewPrinter(language.English)

// pointer renders tokens as an RFC 6901 JSON pointer.
func pointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		sb.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return sb.String()
}

// Validator is the embedded schemas as a protocol.Validator: what a worker
// gives its codec to check the data of the requests it decodes. The zero
// value is ready to use.
type Validator struct{}

// Has calls [Has].
func (Validator) Has(eventType string) bool { return Has(eventType) }

// Validate calls [Validate].
func (Validator) Validate(eventType string, data []byte) error { return Validate(eventType, data) }

// Has reports whether eventType has a schema (see Validate for named
// operations). It is false when the embedded schemas do not compile.
func Has(eventType string) bool {
	c, err := load()
	if err != nil {
		return false
	}
	_, ok := c.lookup(eventType)
	return ok
}

// Types returns, sorted, the event types that have a schema file of their
// own (every file named lionbus.*.json). Named operations without their own
// file are not listed.
func Types() []string {
	c, err := load()
	if err != nil {
		return nil
	}
	return slices.Clone(c.types)
}

// Schema returns the JSON text of the schema applied to eventType's data.
func Schema(eventType string) ([]byte, bool) {
	c, err := load()
	if err != nil {
		return nil, false
	}
	name, ok := c.lookup(eventType)
	if !ok {
		return nil, false
	}
	return slices.Clone(c.raw[name]), true
}
