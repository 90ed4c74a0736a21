package openai

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Model options the provider reads itself; they are not sent.
const (
	// OptionSchemaName is the name given to Call.ResponseFormat in
	// response_format.json_schema.name (1 to 64 of [a-zA-Z0-9_-]); default
	// DefaultSchemaName.
	OptionSchemaName = "schema_name"
	// OptionStrict, when true, asks for strict schema adherence of both
	// the response_format schema and the function tools' parameters; the
	// schemas must then be in the subset strict mode accepts (every
	// property required, additionalProperties false). Default false.
	OptionStrict = "strict"
)

// DefaultSchemaName names the response_format schema when the model
// reference sets no OptionSchemaName.
const DefaultSchemaName = "response"

// kind is the JSON type a model option must have.
type kind int

const (
	kindNumber kind = iota
	kindInteger
	kindBool
	kindString
	kindStop // a string or a list of strings
)

// optionKinds are the types of the well-known request options; other
// options are sent as they are.
var optionKinds = map[string]kind{
	"temperature":           kindNumber,
	"top_p":                 kindNumber,
	"presence_penalty":      kindNumber,
	"frequency_penalty":     kindNumber,
	"max_tokens":            kindInteger,
	"max_completion_tokens": kindInteger,
	"seed":                  kindInteger,
	"n":                     kindInteger,
	"top_logprobs":          kindInteger,
	"logprobs":              kindBool,
	"parallel_tool_calls":   kindBool,
	"store":                 kindBool,
	"stop":                  kindStop,
	"reasoning_effort":      kindString,
	"user":                  kindString,
	"service_tier":          kindString,
	OptionSchemaName:        kindString,
	OptionStrict:            kindBool,
}

// message is one message of a request.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// tool is one function tool of a request.
type tool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// responseFormat is a request's response_format.
type responseFormat struct {
	Type       string     `json:"type"`
	JSONSchema jsonSchema `json:"json_schema"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// buildRequest returns the JSON body of the Chat Completions request for
// call: its model options (checked, see optionKinds), model, messages,
// tools and response_format; with stream, also asks for the answer as
// server-sent events with the usage at the end. Errors wrap ErrInvalidCall.
func buildRequest(call ops.Call, stream bool) ([]byte, error) {
	if call.Model.Model == "" {
		return nil, fmt.Errorf("%w: the model reference names no model (want \"%s:MODEL\")", ErrInvalidCall, call.Model.Provider)
	}
	if call.Messages.Len() == 0 {
		return nil, fmt.Errorf("%w: the call has no messages", ErrInvalidCall)
	}
	body := make(map[string]any, len(call.Model.Options)+4)
	schemaName, strict := DefaultSchemaName, false
	for _, k := range slices.Sorted(maps.Keys(call.Model.Options)) {
		v := call.Model.Options[k]
		switch k {
		case "model", "messages", "stream_options":
			return nil, fmt.Errorf("%w: model option %q is set by the provider and cannot be given", ErrInvalidCall, k)
		case "stream":
			if v != nil && v != false {
				return nil, fmt.Errorf("%w: model option \"stream\": this provider reads whole answers; streaming is not supported", ErrInvalidCall)
			}
			continue
		}
		if kd, ok := optionKinds[k]; ok && !kd.accepts(v) {
			return nil, fmt.Errorf("%w: model option %q must be %s, got %s", ErrInvalidCall, k, kd, describe(v))
		}
		switch k {
		case "n":
			if n, _ := ops.Number(v); n != 1 {
				return nil, fmt.Errorf("%w: model option \"n\" must be 1: only the first choice is read", ErrInvalidCall)
			}
		case OptionSchemaName:
			schemaName = v.(string)
			if !validSchemaName(schemaName) {
				return nil, fmt.Errorf("%w: model option %q must be 1 to 64 of [a-zA-Z0-9_-], got %q", ErrInvalidCall, k, truncate(schemaName, 80))
			}
			continue
		case OptionStrict:
			strict = v.(bool)
			continue
		}
		body[k] = v
	}

	msgs := make([]message, call.Messages.Len())
	for i, m := range call.Messages.All() {
		switch m.Role {
		case history.RoleSystem, history.RoleUser, history.RoleAssistant:
			msgs[i] = message{Role: string(m.Role), Content: m.Content}
		default:
			return nil, fmt.Errorf("%w: message %d has role %q; Chat Completions takes system, user and assistant messages", ErrInvalidCall, i, m.Role)
		}
	}
	body["model"] = call.Model.Model
	body["messages"] = msgs

	if len(call.Tools) > 0 {
		tools := make([]tool, len(call.Tools))
		for i, t := range call.Tools {
			if t.Name == "" {
				return nil, fmt.Errorf("%w: tool %d has no name", ErrInvalidCall, i)
			}
			if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
				return nil, fmt.Errorf("%w: the parameters of tool %q are not valid JSON", ErrInvalidCall, t.Name)
			}
			tools[i] = tool{Type: "function", Function: toolFunction{
				Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: strict,
			}}
		}
		body["tools"] = tools
	}
	if len(call.ResponseFormat) > 0 {
		if !json.Valid(call.ResponseFormat) {
			return nil, fmt.Errorf("%w: the response format schema is not valid JSON", ErrInvalidCall)
		}
		body["response_format"] = responseFormat{Type: "json_schema", JSONSchema: jsonSchema{
			Name: schemaName, Schema: call.ResponseFormat, Strict: strict,
		}}
	}
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%w: the request cannot be encoded: %v", ErrInvalidCall, err)
	}
	return b, nil
}

// validSchemaName reports whether s is 1 to 64 of [a-zA-Z0-9_-].
func validSchemaName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// accepts reports whether v, a JSON value as encoding/json or msgpack
// decode it (or as a Go caller builds it), has kind k.
func (k kind) accepts(v any) bool {
	switch k {
	case kindNumber:
		_, ok := ops.Number(v)
		return ok
	case kindInteger:
		f, ok := ops.Number(v)
		return ok && f == math.Trunc(f) && math.Abs(f) <= 1<<53
	case kindBool:
		_, ok := v.(bool)
		return ok
	case kindString:
		_, ok := v.(string)
		return ok
	case kindStop:
		switch s := v.(type) {
		case string:
			return true
		case []string:
			return true
		case []any:
			for _, e := range s {
				if _, ok := e.(string); !ok {
					return false
				}
			}
			return true
		}
	}
	return false
}

// String names the kind in an error.
func (k kind) String() string {
	switch k {
	case kindNumber:
		return "a number"
	case kindInteger:
		return "an integer"
	case kindBool:
		return "true or false"
	case kindString:
		return "a string"
	case kindStop:
		return "a string or a list of strings"
	}
	return "unknown"
}

// describe names the JSON type of v in an error, without its value.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any, []string:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if f, ok := ops.Number(v); ok {
		if f == math.Trunc(f) {
			return "an integer"
		}
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}
