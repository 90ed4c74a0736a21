// Package toolschema compiles the parameters schemas of tools with a JSON
// Schema 2020-12 compiler, for a tool service that wants its invocations'
// arguments checked before its handlers run:
//
//	tools.Serve(ctx, nc, tools.ServiceConfig{..., Compile: toolschema.Compile})
//
// It is a package of its own so that pkg/tools links no schema compiler:
// a service that checks its arguments itself (or not at all) stays small.
// The compiler is github.com/santhosh-tekuri/jsonschema/v6, the one the
// worker uses for the protocol's schemas.
package toolschema

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL is the name the schema is compiled under; nothing else is
// loaded.
const schemaURL = "lionbus:tool-parameters.json"

// Compile compiles parameters, a JSON Schema (draft 2020-12 unless it
// says otherwise) with no references outside itself, and returns the check
// of a call's arguments: nil when they match, else the validator's report.
// Its type is that of tools.Compiler.
func Compile(parameters json.RawMessage) (func(args map[string]any) error, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(parameters))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	return func(args map[string]any) error { return sch.Validate(args) }, nil
}

// noLoader refuses every external reference: a tool's schema must be
// self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not allowed", url)
}
