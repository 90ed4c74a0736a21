package cli

import (
	"encoding/json"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops"
)

// GeminiDecoder turns the lines of a `gemini -p … --output-format
// stream-json` run into chunks: init is the system chunk with the session
// id; assistant message lines are text (deltas when marked so; the user's
// own message is left out); tool_use and tool_result carry the tool id;
// result is the result with its stats (an error result also the error
// chunk); error lines are system notices unless their severity is error.
// It is not safe for concurrent use.
type GeminiDecoder struct {
	sawError bool
}

type geminiLine struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Delta      bool            `json:"delta"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters map[string]any  `json:"parameters"`
	Status     string          `json:"status"`
	Output     json.RawMessage `json:"output"`
	Error      json.RawMessage `json:"error"`
	Severity   string          `json:"severity"`
	Message    string          `json:"message"`
	Stats      json.RawMessage `json:"stats"`
}

// Decode returns the chunks of one line of Gemini CLI stream-json.
func (d *GeminiDecoder) Decode(raw []byte) ([]ops.Chunk, error) {
	raw = []byte(strings.TrimSpace(string(raw)))
	if len(raw) == 0 {
		return nil, nil
	}
	var l geminiLine
	if raw[0] != '{' || json.Unmarshal(raw, &l) != nil {
		return nil, ErrNotJSON
	}
	switch l.Type {
	case "init":
		md := map[string]any{"subtype": "init"}
		if l.SessionID != "" {
			md[ops.MetaSessionID] = l.SessionID
		}
		if l.Model != "" {
			md["model"] = l.Model
		}
		return []ops.Chunk{{Kind: ops.ChunkSystem, Metadata: md}}, nil
	case "message":
		if l.Role != "assistant" || l.Content == "" {
			return nil, nil
		}
		return []ops.Chunk{{Kind: ops.ChunkText, Content: l.Content, IsDelta: l.Delta}}, nil
	case "thought", "thinking":
		if strings.TrimSpace(l.Content) == "" {
			return nil, nil
		}
		return []ops.Chunk{{Kind: ops.ChunkThinking, Content: l.Content}}, nil
	case "tool_use":
		return []ops.Chunk{{Kind: ops.ChunkToolUse, ToolID: l.ToolID, ToolName: l.ToolName, ToolInput: l.Parameters}}, nil
	case "tool_result":
		c := ops.Chunk{Kind: ops.ChunkToolResult, ToolID: l.ToolID, ToolOutput: decodeAny(l.Output), Metadata: map[string]any{"status": l.Status}}
		if l.Status != "" && l.Status != "success" {
			c.IsError = true
			if e := decodeAny(l.Error); e != nil {
				c.ToolOutput = e
			}
		}
		return []ops.Chunk{c}, nil
	case "error":
		if l.Severity != "error" {
			return []ops.Chunk{{Kind: ops.ChunkSystem, Metadata: map[string]any{"subtype": "warning", "severity": l.Severity, "message": l.Message}}}, nil
		}
		return d.fail(l.Message), nil
	case "result":
		md := map[string]any{"subtype": l.Status}
		if v, ok := decodeAny(l.Stats).(map[string]any); ok {
			md["stats"] = v
			in, _ := ops.Number(v["input_tokens"])
			out, _ := ops.Number(v["output_tokens"])
			md["usage"] = map[string]any{"input_tokens": in, "output_tokens": out}
		}
		chunks := []ops.Chunk{{Kind: ops.ChunkResult, Metadata: md}}
		if l.Status == "error" {
			msg := ""
			var e struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(l.Error, &e) == nil {
				msg = e.Message
			}
			if msg == "" {
				msg = "Gemini CLI session failed"
			}
			chunks = append(chunks, d.fail(msg)...)
		}
		return chunks, nil
	}
	return nil, nil
}

// fail returns the error chunk of msg, once per run.
func (d *GeminiDecoder) fail(msg string) []ops.Chunk {
	if d.sawError {
		return nil
	}
	d.sawError = true
	return []ops.Chunk{{Kind: ops.ChunkError, Content: msg, IsError: true}}
}
