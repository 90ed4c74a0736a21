package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops"
)

// response is the part of a Chat Completions response that is read.
// Unknown fields are ignored.
type response struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Model   string    `json:"model"`
	Choices []choice  `json:"choices"`
	Usage   *usage    `json:"usage"`
	Error   *apiError `json:"error"`
}

type choice struct {
	Index        int             `json:"index"`
	FinishReason string          `json:"finish_reason"`
	Message      responseMessage `json:"message"`
}

type responseMessage struct {
	Role string `json:"role"`
	// Content is a string or null; some compatible servers send a list
	// of text parts.
	Content   json.RawMessage `json:"content"`
	Refusal   string          `json:"refusal"`
	ToolCalls []toolCall      `json:"tool_calls"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON object encoded as a string; some compatible
		// servers send the object itself.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// apiError is the error object of an error answer.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// maxQuotedBody bounds the start of a malformed body quoted in an error.
const maxQuotedBody = 200

// decodeResponse decodes the body of a successful answer into a completion:
// the first choice's text (its content, or its refusal when it has no
// content), its tool calls, the usage and the raw body, kept compact in
// at most maxRaw bytes (see Config.MaxRawBytes; 0 keeps none). Errors
// wrap ErrMalformedResponse, ErrNoChoices or ErrToolArguments.
func decodeResponse(body []byte, maxRaw int) (*ops.Completion, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: the body is empty", ErrMalformedResponse)
	}
	var r response
	if trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: the body is not a JSON object: %q", ErrMalformedResponse, truncate(string(trimmed), maxQuotedBody))
	}
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return nil, fmt.Errorf("%w: %v: %q", ErrMalformedResponse, err, truncate(string(trimmed), maxQuotedBody))
	}
	if len(r.Choices) == 0 {
		if r.Error != nil && r.Error.Message != "" {
			return nil, fmt.Errorf("%w: the answer is an error: %q", ErrNoChoices, truncate(r.Error.Message, MaxErrorMessageLen))
		}
		return nil, ErrNoChoices
	}
	ch := r.Choices[0]
	text, err := content(ch.Message.Content)
	if err != nil {
		return nil, err
	}
	if text == "" && ch.Message.Refusal != "" {
		text = ch.Message.Refusal
	}
	comp := &ops.Completion{Text: text}
	for i, tc := range ch.Message.ToolCalls {
		call, err := decodeToolCall(i, tc)
		if err != nil {
			return nil, err
		}
		comp.ToolCalls = append(comp.ToolCalls, call)
	}
	if r.Usage != nil {
		u := ops.Usage{InputTokens: r.Usage.PromptTokens, OutputTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.TotalTokens}
		if u.TotalTokens == 0 {
			u.TotalTokens = u.InputTokens + u.OutputTokens
		}
		comp.Usage = &u
	}
	comp.Raw = rawAnswer(trimmed, &r, maxRaw)
	return comp, nil
}

// content returns a message's content: a string, null, or a list of parts
// whose text parts are joined.
func content(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: message content: %v", ErrMalformedResponse, err)
		}
		return s, nil
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", fmt.Errorf("%w: message content parts: %v", ErrMalformedResponse, err)
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("%w: message content is neither a string, null nor a list of parts", ErrMalformedResponse)
}

// decodeToolCall turns the i-th tool call of an answer into an ops.ToolCall,
// its arguments decoded from their JSON string.
func decodeToolCall(i int, tc toolCall) (ops.ToolCall, error) {
	if tc.Type != "" && tc.Type != "function" {
		return ops.ToolCall{}, fmt.Errorf("%w: tool call %d is of type %q; only function calls are read", ErrMalformedResponse, i, truncate(tc.Type, 64))
	}
	name := tc.Function.Name
	if name == "" {
		return ops.ToolCall{}, fmt.Errorf("%w: tool call %d names no function", ErrMalformedResponse, i)
	}
	call := ops.ToolCall{ID: tc.ID, Name: name}
	raw := bytes.TrimSpace(tc.Function.Arguments)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return ops.ToolCall{}, fmt.Errorf("%w: tool call %d (%q): %v", ErrToolArguments, i, truncate(name, 64), err)
		}
		raw = bytes.TrimSpace([]byte(s))
	}
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return call, nil
	}
	if raw[0] != '{' {
		return ops.ToolCall{}, fmt.Errorf("%w: tool call %d (%q): the arguments are not a JSON object: %q",
			ErrToolArguments, i, truncate(name, 64), truncate(string(raw), maxQuotedBody))
	}
	if err := json.Unmarshal(raw, &call.Arguments); err != nil {
		return ops.ToolCall{}, fmt.Errorf("%w: tool call %d (%q): %v: %q",
			ErrToolArguments, i, truncate(name, 64), err, truncate(string(raw), maxQuotedBody))
	}
	return call, nil
}

// rawAnswer returns body compacted when that fits in maxRaw bytes, else
// a summary of r marked "truncated", else a bare marker, else nil.
func rawAnswer(body []byte, r *response, maxRaw int) json.RawMessage {
	if maxRaw <= 0 {
		return nil
	}
	var buf bytes.Buffer
	if len(body) <= 2*maxRaw { // compacting removes white space only
		if err := json.Compact(&buf, body); err == nil && buf.Len() <= maxRaw {
			return json.RawMessage(buf.Bytes())
		}
	}
	summary := map[string]any{
		"truncated": true,
		"bytes":     len(body),
		"id":        truncate(r.ID, 128),
		"object":    truncate(r.Object, 64),
		"model":     truncate(r.Model, 128),
	}
	choices := make([]map[string]any, 0, 1)
	for _, c := range r.Choices[:1] {
		choices = append(choices, map[string]any{"index": c.Index, "finish_reason": truncate(c.FinishReason, 64)})
	}
	summary["choices"] = choices
	if r.Usage != nil {
		summary["usage"] = r.Usage
	}
	if b, err := json.Marshal(summary); err == nil && len(b) <= maxRaw {
		return b
	}
	if b, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(body)}); len(b) <= maxRaw {
		return b
	}
	return nil
}

// decodeError returns the StatusError of an error answer: its
// error.message, type, param and code when the body is the usual
// {"error": {...}}, else the start of the body as the message.
func decodeError(status int, body []byte) *StatusError {
	se := &StatusError{StatusCode: status}
	body = bytes.TrimSpace(body)
	var e struct {
		Error json.RawMessage `json:"error"`
		// Message is where a few compatible servers put it.
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		se.Message = truncate(string(body), MaxErrorMessageLen)
		return se
	}
	var ae apiError
	var s string
	switch {
	case json.Unmarshal(e.Error, &ae) == nil && ae.Message != "":
		se.Message = ae.Message
		se.Type = ae.Type
		se.Param = scalar(ae.Param)
		se.Code = scalar(ae.Code)
	case json.Unmarshal(e.Error, &s) == nil && s != "":
		se.Message = s
	default:
		se.Message = e.Message
	}
	se.Message = truncate(se.Message, MaxErrorMessageLen)
	se.Type = truncate(se.Type, 64)
	se.Param = truncate(se.Param, 64)
	se.Code = truncate(se.Code, 64)
	return se
}

// scalar returns a JSON string or number as text, anything else as "".
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
