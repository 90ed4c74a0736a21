// Package render turns lionbus answers into text for people: result
// values, recorded messages and JSON, as the worker's demo and the
// publisher print them.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lionbus/lionbus/pkg/wire"
)

// StringValue returns the text of a result value that is a JSON string,
// and false for any other value.
func StringValue(raw json.RawMessage) (string, bool) {
	var s string
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '"' || json.Unmarshal(t, &s) != nil {
		return "", false // null decodes into a string too, but is not one
	}
	return s, true
}

// CompactValue renders a result value on one line: a JSON string as its
// text, anything else as the JSON it is.
func CompactValue(raw json.RawMessage) string {
	if s, ok := StringValue(raw); ok {
		return s
	}
	return string(raw)
}

// IndentedValue renders a result value for reading: a JSON string as its
// text, anything else as indented JSON.
func IndentedValue(raw json.RawMessage) string {
	if s, ok := StringValue(raw); ok {
		return s
	}
	return IndentJSON(raw)
}

// IndentJSON pretty-prints raw JSON, or returns it as is when it is not
// valid.
func IndentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// messageKeys are the content keys whose value is the gist of a message,
// in order of preference.
var messageKeys = []string{wire.KeyInstruction, wire.KeyAssistantResponse, wire.KeySystemMessage, wire.KeyPlainContent, wire.KeyFunction}

// MessageText is the gist of a recorded message: its instruction, reply,
// system text, plain content or function, else its whole content as JSON.
// An action request is its function and arguments, an action response its
// function and output (or error).
func MessageText(m wire.Message) string {
	fn, _ := m.Content[wire.KeyFunction].(string)
	switch m.Kind {
	case wire.KindActionRequest:
		args, _ := json.Marshal(m.Content[wire.KeyArguments])
		return fn + " " + string(args)
	case wire.KindActionResponse:
		if e, ok := m.Content[wire.KeyError]; ok && e != nil && e != "" {
			return fmt.Sprintf("%s → error: %v", fn, e)
		}
		out, _ := json.Marshal(m.Content[wire.KeyOutput])
		return fn + " → " + string(out)
	}
	for _, k := range messageKeys {
		if v, ok := m.Content[k]; ok {
			return Text(v)
		}
	}
	b, _ := json.Marshal(m.Content)
	return string(b)
}

// Text is v as text: a string as it is, any other value as JSON.
func Text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Clip shortens s to at most n runes (n >= 1), on one line: runs of white
// space, newlines included, become one space, and a clipped text ends
// with "…".
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
