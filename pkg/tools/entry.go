package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds on a registry entry. They keep one entry well under the default
// NATS max payload and keep names usable as subject tokens.
const (
	// MaxNameLength bounds a tool name (it becomes a subject token).
	MaxNameLength = 128
	// MaxDescriptionLength bounds a description, in bytes.
	MaxDescriptionLength = 8 << 10
	// MaxParametersSize bounds the JSON Schema of the parameters, in bytes.
	MaxParametersSize = 64 << 10
)

// ErrInvalidEntry is matched (errors.Is) by every error of [Entry.Validate]
// and [DecodeEntry].

// Compiler compiles a tool's parameters schema into a check of a call's
// arguments: the check returns nil when the arguments match, else why
// not. The schema it gets is a JSON object of type "object" within the
// shape bounds (wire.CheckSchemaShape); Compiler refuses one it cannot
// compile, and must not load anything from outside the schema.
//
// pkg/tools links no JSON Schema compiler itself, so that a tool service
// stays small: package toolschema provides one ([toolschema.Compile],
// JSON Schema 2020-12), which a service opts into with
// [ServiceConfig].Compile.
type Compiler func(parameters json.RawMessage) (func(args map[string]any) error, error)

var ErrInvalidEntry = errors.New("tools: invalid registry entry")

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Entry is a tool's record in the registry bucket: key = Name, value = the
// JSON form of Entry. The field names are part of lionbus's public protocol.
type Entry struct {
	// Name is the tool's name: 1 to MaxNameLength characters of
	// [A-Za-z0-9_-]; it is also the registry key.
	Name string `json:"name"`
	// Description tells a model what the tool does.
	Description string `json:"description"`
	// Parameters is the JSON Schema (2020-12) of the tool's arguments
	// object.
	Parameters json.RawMessage `json:"parameters"`
	// Subject is where the tool answers invocations, normally
	// "<prefix>.tool.<name>".
	Subject string `json:"subject"`
	// Version is the tool's version, free-form (e.g. "1.2.0").
	Version string `json:"version,omitempty"`
}

// DecodeEntry decodes and validates (Validate(nil): the shape of the
// parameters, not their compilation) a registry value stored under key.
// The key must equal the entry's name.
func DecodeEntry(key string, value []byte) (*Entry, error) { return decodeEntry(key, value, nil) }

// decodeEntry is DecodeEntry with the parameters compiled by compile, when
// it is not nil.
func decodeEntry(key string, value []byte, compile Compiler) (*Entry, error) {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	var e Entry
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidEntry, key, err)
	}
	if e.Name != key {
		return nil, fmt.Errorf("%w: key %q holds the entry of %q", ErrInvalidEntry, key, e.Name)
	}
	if err := e.Validate(compile); err != nil {
		return nil, err
	}
	return &e, nil
}

// Validate checks the entry: a valid name, a bounded description, a subject
// with no wildcards, and parameters that are a JSON Schema of an object
// within the shape bounds; with compile non-nil, also that compile
// accepts the parameters.
func (e *Entry) Validate(compile Compiler) error {
	_, err := e.check(compile)
	return err
}

// check checks the entry as Validate does and returns its parameters
// compiled (nil when compile is nil).
func (e *Entry) check(compile Compiler) (func(map[string]any) error, error) {
	if len(e.Name) == 0 || len(e.Name) > MaxNameLength || !nameRE.MatchString(e.Name) {
		return nil, fmt.Errorf("%w: name %q must be 1 to %d characters of [A-Za-z0-9_-]", ErrInvalidEntry, e.Name, MaxNameLength)
	}
	if len(e.Description) > MaxDescriptionLength {
		return nil, fmt.Errorf("%w: %s: description is %d bytes, over the %d byte limit", ErrInvalidEntry, e.Name, len(e.Description), MaxDescriptionLength)
	}
	if !validSubject(e.Subject) {
		return nil, fmt.Errorf("%w: %s: subject %q must be a literal subject (dot-separated tokens, no wildcards or spaces)", ErrInvalidEntry, e.Name, e.Subject)
	}
	if len(e.Parameters) == 0 {
		return nil, fmt.Errorf("%w: %s: parameters (a JSON Schema) are required", ErrInvalidEntry, e.Name)
	}
	if len(e.Parameters) > MaxParametersSize {
		return nil, fmt.Errorf("%w: %s: parameters are %d bytes, over the %d byte limit", ErrInvalidEntry, e.Name, len(e.Parameters), MaxParametersSize)
	}
	if err := checkParameters(e.Parameters); err != nil {
		return nil, fmt.Errorf("%w: %s: parameters: %v", ErrInvalidEntry, e.Name, err)
	}
	if compile == nil {
		return nil, nil
	}
	check, err := compile(e.Parameters)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: parameters: %v", ErrInvalidEntry, e.Name, err)
	}
	return check, nil
}

// checkParameters checks that a parameters schema is JSON describing an
// object, within the shape bounds.
func checkParameters(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return errors.New("not JSON: more than one value")
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return errors.New("must be a JSON Schema object")
	}
	if t, ok := obj["type"]; !ok || t != "object" {
		return errors.New(`must have "type": "object" (the arguments are an object)`)
	}
	return wire.CheckSchemaShape(doc)
}

func validSubject(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return false
		}
	}
	return true
}
