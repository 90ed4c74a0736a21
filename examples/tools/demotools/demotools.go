// Package demotools holds the two example tool services of lionbus, written
// with the pkg/tools SDK: a calculator and a key/value notes tool. The
// programs examples/tools/calculator and examples/tools/notes serve them on
// their own; the worker's demo (worker --demo) serves them in its process.
package demotools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// Version is the version of both example services.
const Version = "1.0.0"

// Calculator returns the configuration of the calculator service: the
// tools calculate (a op b) and to_celsius. It has no state, so any number
// of replicas may run.
func Calculator(prefix string) tools.ServiceConfig {
	return tools.ServiceConfig{
		Compile: toolschema.Compile, Name: "calculator", Version: Version, Prefix: prefix,
		Description: "Arithmetic and unit conversion for lionbus branches.",
		Tools: []tools.Tool{
			{
				Name:        "calculate",
				Description: "Computes a op b for op one of add, sub, mul, div.",
				Parameters: json.RawMessage(`{"type":"object","properties":{
					"op":{"enum":["add","sub","mul","div"]},"a":{"type":"number"},"b":{"type":"number"}},
					"required":["op","a","b"],"additionalProperties":false}`),
				Handler: calculate,
			},
			{
				Name:        "to_celsius",
				Description: "Converts a temperature from degrees Fahrenheit to degrees Celsius.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"fahrenheit":{"type":"number"}},
					"required":["fahrenheit"],"additionalProperties":false}`),
				Handler: func(_ context.Context, args map[string]any) (any, error) {
					f := args["fahrenheit"].(float64) // the schema says it is a number
					return map[string]any{"celsius": math.Round((f-32)*5/9*10) / 10}, nil
				},
			},
		},
	}
}

// calculate is the calculate tool; its arguments have been checked against
// its schema.
func calculate(_ context.Context, args map[string]any) (any, error) {
	a, b := args["a"].(float64), args["b"].(float64)
	switch args["op"] {
	case "add":
		return a + b, nil
	case "sub":
		return a - b, nil
	case "mul":
		return a * b, nil
	}
	if b == 0 {
		return nil, tools.Errorf("division_by_zero", "cannot divide %v by zero", a)
	}
	return a / b, nil
}

// NotesBucket returns the KV bucket the notes service keeps its notes in:
// "<prefix>_notes".
func NotesBucket(prefix string) string { return prefix + "_notes" }

// maxNoteLength bounds a note's text, in characters.
const maxNoteLength = 4096

// Notes returns the configuration of the notes service: the tools
// note_put, note_get and note_list over the KV bucket NotesBucket(prefix),
// which it creates when missing. Replicas share the bucket.
func Notes(ctx context.Context, js jetstream.JetStream, prefix string) (tools.ServiceConfig, error) {
	if prefix == "" {
		prefix = tools.DefaultPrefix
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: NotesBucket(prefix), Description: "lionbus example notes", History: 1,
	})
	if err != nil {
		return tools.ServiceConfig{}, fmt.Errorf("notes bucket: %w", err)
	}
	key := `"key":{"type":"string","pattern":"^[A-Za-z0-9_-]{1,64}$"}`
	return tools.ServiceConfig{
		Compile: toolschema.Compile, Name: "notes", Version: Version, Prefix: prefix,
		Description: "A shared key/value notebook for lionbus branches.",
		Tools: []tools.Tool{
			{
				Name:        "note_put",
				Description: "Saves a note under a key, replacing any note of that key.",
				Parameters: json.RawMessage(`{"type":"object","properties":{` + key + `,
					"text":{"type":"string","maxLength":` + fmt.Sprint(maxNoteLength) + `}},
					"required":["key","text"],"additionalProperties":false}`),
				Handler: func(ctx context.Context, args map[string]any) (any, error) {
					k, text := args["key"].(string), args["text"].(string)
					if _, err := kv.PutString(ctx, k, text); err != nil {
						return nil, err
					}
					return map[string]any{"key": k, "words": len(strings.Fields(text))}, nil
				},
			},
			{
				Name:        "note_get",
				Description: "Reads the note saved under a key.",
				Parameters: json.RawMessage(`{"type":"object","properties":{` + key + `},
					"required":["key"],"additionalProperties":false}`),
				Handler: func(ctx context.Context, args map[string]any) (any, error) {
					k := args["key"].(string)
					e, err := kv.Get(ctx, k)
					if errors.Is(err, jetstream.ErrKeyNotFound) {
						return nil, tools.Errorf("not_found", "no note under %q", k)
					}
					if err != nil {
						return nil, err
					}
					return map[string]any{"key": k, "text": string(e.Value())}, nil
				},
			},
			{
				Name:        "note_list",
				Description: "Lists the keys of the saved notes.",
				Parameters:  json.RawMessage(`{"type":"object","additionalProperties":false}`),
				Handler: func(ctx context.Context, _ map[string]any) (any, error) {
					keys, err := kv.ListKeys(ctx)
					if err != nil {
						return nil, err
					}
					out := []string{}
					for k := range keys.Keys() {
						out = append(out, k)
					}
					slices.Sort(out)
					return out, nil
				},
			},
		},
	}, nil
}
