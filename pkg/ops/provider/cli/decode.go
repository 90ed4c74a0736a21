package cli

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Sentinel errors of [Decoder.Decode].
var (
	// ErrNotJSON means a stdout line is not a JSON object; the line is
	// skipped.
	ErrNotJSON = errors.New("cli: output line is not a JSON object")
	// ErrDone means the line was the end marker ({"type":"done"}): nothing
	// after it is read.
	ErrDone = errors.New("cli: end of stream marker")
)

// Keys of a result chunk's metadata whose numbers add up over the turns
// of one response ([Provider.TotalKeys]).
const (
	// MetaTotalCostUSD is what the turn cost, as the CLI reports it.
	MetaTotalCostUSD = "total_cost_usd"
	// MetaNumTurns is how many turns the CLI ran.
	MetaNumTurns = "num_turns"
)

// Decoder turns the lines of a Claude Code `--output-format stream-json`
// run (one JSON object per line) into chunks (ADR-0021 D3's kinds). It
// also accepts the error lines of codex-style streams ({"type":"error"}),
// with their benign end of stream and reconnect notices. A Decoder keeps
// the state of one run; it is not safe for concurrent use.
type Decoder struct {
	// partial marks the message ids whose text or thinking arrived as
	// deltas (stream_event lines), so the full blocks that follow are not
	// forwarded twice.
	partial map[string]bool
	// current is the message id of the last message_start.
	current string
	// sawError is set once an error chunk was produced.
	sawError bool
}

// line is the union of the fields read from a stream-json line.
type line struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Model     string          `json:"model"`
	Tools     json.RawMessage `json:"tools"`
	Message   json.RawMessage `json:"message"` // an object, or an error line's text
	Event     *streamEvent    `json:"event"`
	// result lines
	IsError           bool            `json:"is_error"`
	Result            *string         `json:"result"`
	Usage             json.RawMessage `json:"usage"`
	ModelUsage        json.RawMessage `json:"modelUsage"`
	TotalCostUSD      *float64        `json:"total_cost_usd"`
	NumTurns          *float64        `json:"num_turns"`
	DurationMS        *float64        `json:"duration_ms"`
	Errors            []any           `json:"errors"`
	StopReason        json.RawMessage `json:"stop_reason"`
	TerminalReason    json.RawMessage `json:"terminal_reason"`
	PermissionDenials json.RawMessage `json:"permission_denials"`
	APIErrorStatus    json.RawMessage `json:"api_error_status"`
	// user lines
	ToolUseResult json.RawMessage `json:"tool_use_result"`
	// error lines (codex style)
	Error  json.RawMessage `json:"error"`
	Code   any             `json:"code"`
	Status any             `json:"status"`
}

type message struct {
	ID      string          `json:"id"`
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     map[string]any  `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type streamEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID string `json:"id"`
	} `json:"message"`
	Delta *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

// reconnecting matches a codex reconnect notice.
var reconnecting = regexp.MustCompile(`^Reconnecting\.\.\. \d+/\d+ \(`)

// Decode returns the chunks of one output line, in order: none for a line
// of an unknown or ignored type. It returns ErrNotJSON for a line that is
// not a JSON object and ErrDone for the end marker.
func (d *Decoder) Decode(raw []byte) ([]ops.Chunk, error) {
	raw = []byte(strings.TrimSpace(string(raw)))
	if len(raw) == 0 {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, ErrNotJSON
	}
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, ErrNotJSON
	}
	switch l.Type {
	case "system":
		return []ops.Chunk{systemChunk(raw, &l)}, nil
	case "stream_event":
		return d.streamEvent(l.Event), nil
	case "assistant":
		return d.assistant(messageOf(l.Message)), nil
	case "user":
		out := d.user(messageOf(l.Message))
		if v := decodeAny(l.ToolUseResult); v != nil && len(out) == 1 {
			// The tool's own account of its run (stdout, stderr,
			// interrupted...), beside the text the model got.
			out[0].Metadata = map[string]any{"tool_use_result": v}
		}
		return out, nil
	case "result":
		return d.result(&l), nil
	case "error", "turn.failed":
		return d.errorLine(raw, &l), nil
	case "done":
		return nil, ErrDone
	}
	return nil, nil // unknown types are ignored
}

// systemChunk maps a system line. The init line keeps the session, the
// model, the tools and the CLI's settings; any other subtype (status,
// thinking_tokens, task_started, task_notification...) keeps all its
// fields but type and uuid, and a tool_use_id becomes the chunk's ToolID,
// linking a task's notices to the tool call that started it.
func systemChunk(raw []byte, l *line) ops.Chunk {
	md := map[string]any{"subtype": l.Subtype}
	if l.Subtype == "init" {
		if l.Model != "" {
			md["model"] = l.Model
		}
		if v := decodeAny(l.Tools); v != nil {
			md["tools"] = v
		}
		var init struct {
			CWD            string `json:"cwd"`
			PermissionMode string `json:"permissionMode"`
			Version        string `json:"claude_code_version"`
		}
		_ = json.Unmarshal(raw, &init)
		for k, v := range map[string]string{"cwd": init.CWD, "permission_mode": init.PermissionMode, "cli_version": init.Version} {
			if v != "" {
				md[k] = v
			}
		}
	} else {
		var all map[string]any
		_ = json.Unmarshal(raw, &all)
		for k, v := range all {
			if k != "type" && k != "uuid" {
				md[k] = v
			}
		}
	}
	if l.SessionID != "" {
		md[ops.MetaSessionID] = l.SessionID
	}
	c := ops.Chunk{Kind: ops.ChunkSystem, Metadata: md}
	if id, _ := md["tool_use_id"].(string); id != "" {
		c.ToolID = id
	}
	return c
}

func (d *Decoder) streamEvent(ev *streamEvent) []ops.Chunk {
	if ev == nil {
		return nil
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			d.current = ev.Message.ID
		}
	case "message_stop":
		d.current = ""
	case "content_block_delta":
		if ev.Delta == nil {
			return nil
		}
		var c ops.Chunk
		switch ev.Delta.Type {
		case "text_delta":
			c = ops.Chunk{Kind: ops.ChunkText, Content: ev.Delta.Text, IsDelta: true}
		case "thinking_delta":
			c = ops.Chunk{Kind: ops.ChunkThinking, Content: ev.Delta.Thinking, IsDelta: true}
		default:
			return nil
		}
		if d.current != "" {
			if d.partial == nil {
				d.partial = map[string]bool{}
			}
			d.partial[d.current] = true
		}
		return []ops.Chunk{c}
	}
	return nil
}

func messageOf(raw json.RawMessage) *message {
	var m message
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return &m
}

func blocks(m *message) []block {
	if m == nil || len(m.Content) == 0 {
		return nil
	}
	var bs []block
	if err := json.Unmarshal(m.Content, &bs); err != nil {
		var s string
		if json.Unmarshal(m.Content, &s) == nil && s != "" {
			return []block{{Type: "text", Text: s}}
		}
		return nil
	}
	return bs
}

func (d *Decoder) assistant(m *message) []ops.Chunk {
	var out []ops.Chunk
	deltas := m != nil && m.ID != "" && d.partial[m.ID]
	for _, b := range blocks(m) {
		switch b.Type {
		case "thinking":
			if !deltas && strings.TrimSpace(b.Thinking) != "" {
				out = append(out, ops.Chunk{Kind: ops.ChunkThinking, Content: strings.TrimSpace(b.Thinking)})
			}
		case "text":
			if !deltas && b.Text != "" {
				out = append(out, ops.Chunk{Kind: ops.ChunkText, Content: b.Text})
			}
		case "tool_use":
			out = append(out, ops.Chunk{Kind: ops.ChunkToolUse, ToolID: b.ID, ToolName: b.Name, ToolInput: b.Input})
		case "tool_result":
			out = append(out, toolResult(b))
		}
	}
	return out
}

func (d *Decoder) user(m *message) []ops.Chunk {
	var out []ops.Chunk
	for _, b := range blocks(m) {
		if b.Type == "tool_result" {
			out = append(out, toolResult(b))
		}
	}
	return out
}

func toolResult(b block) ops.Chunk {
	return ops.Chunk{Kind: ops.ChunkToolResult, ToolID: b.ToolUseID, ToolOutput: decodeAny(b.Content), IsError: b.IsError}
}

func (d *Decoder) result(l *line) []ops.Chunk {
	md := map[string]any{}
	if v := decodeAny(l.Usage); v != nil {
		md["usage"] = v
	}
	if v := decodeAny(l.ModelUsage); v != nil {
		md["model_usage"] = v
	}
	if l.TotalCostUSD != nil {
		md[MetaTotalCostUSD] = *l.TotalCostUSD
	}
	if l.NumTurns != nil {
		md[MetaNumTurns] = *l.NumTurns
	}
	if l.DurationMS != nil {
		md["duration_ms"] = *l.DurationMS
	}
	if l.SessionID != "" {
		md[ops.MetaSessionID] = l.SessionID
	}
	if l.Subtype != "" {
		md["subtype"] = l.Subtype
	}
	for k, raw := range map[string]json.RawMessage{
		"stop_reason": l.StopReason, "terminal_reason": l.TerminalReason,
		"permission_denials": l.PermissionDenials, "api_error_status": l.APIErrorStatus,
	} {
		if v := decodeAny(raw); v != nil {
			md[k] = v
		}
	}
	out := []ops.Chunk{{Kind: ops.ChunkResult, Metadata: md}}
	if l.IsError && !d.sawError {
		// Exactly one error chunk per failed session.
		d.sawError = true
		text := ""
		if l.Result != nil {
			text = *l.Result
		}
		if text == "" && len(l.Errors) > 0 {
			parts := make([]string, 0, len(l.Errors))
			for _, e := range l.Errors {
				if s, ok := e.(string); ok {
					parts = append(parts, s)
				} else if b, err := json.Marshal(e); err == nil {
					parts = append(parts, string(b))
				}
			}
			text = strings.Join(parts, "; ")
		}
		if text == "" {
			text = "Claude Code session failed"
			if l.Subtype != "" {
				text += " (" + l.Subtype + ")"
			}
		}
		out = append(out, ops.Chunk{Kind: ops.ChunkError, Content: text, IsError: true})
	}
	return out
}

// errorLine maps a codex-style error line: {"error":{}} alone is a benign
// end of stream, a "Reconnecting... n/m (" message a notice, anything else
// an error.
func (d *Decoder) errorLine(raw []byte, l *line) []ops.Chunk {
	var top map[string]any
	_ = json.Unmarshal(raw, &top)
	msg, _ := top["message"].(string)
	_, hasMsg := top["message"]
	errObj, _ := top["error"].(map[string]any)
	if l.Type == "error" && errObj != nil && len(errObj) == 0 && !hasMsg && l.Code == nil && l.Status == nil {
		return []ops.Chunk{wire.BenignEnd()}
	}
	if msg == "" && errObj != nil {
		msg, _ = errObj["message"].(string)
	}
	if msg == "" {
		if s, ok := top["error"].(string); ok {
			msg = s
		}
	}
	if reconnecting.MatchString(msg) {
		return []ops.Chunk{wire.ReconnectNotice(msg)}
	}
	if d.sawError {
		return nil
	}
	d.sawError = true
	return []ops.Chunk{{Kind: ops.ChunkError, Content: msg, IsError: true}}
}

func decodeAny(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return v
}
