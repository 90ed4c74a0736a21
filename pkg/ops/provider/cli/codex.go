package cli

import (
	"encoding/json"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops"
)

// CodexDecoder turns the lines of a `codex exec --json` run into chunks:
// thread.started is the system chunk with the session (thread) id;
// agent_message and reasoning items are text and thinking; a
// command_execution, file_change, mcp_tool_call or web_search item is a
// tool_use when it starts and its tool_result when it completes (the
// item id links them); turn.completed is the result with the usage;
// turn.failed and error lines are the error. The Codex CLI does not
// stream partial text: each message arrives whole. It is not safe for
// concurrent use.
type CodexDecoder struct {
	started map[string]bool // tool items whose tool_use was emitted
	claude  Decoder         // for the error lines, shared with the codex style
}

type codexLine struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Item     *codexItem      `json:"item"`
	Usage    json.RawMessage `json:"usage"`
}

type codexItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Message          string          `json:"message"`
	Command          string          `json:"command"`
	AggregatedOutput *string         `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Result           json.RawMessage `json:"result"`
	Error            json.RawMessage `json:"error"`
	Changes          json.RawMessage `json:"changes"`
	Query            string          `json:"query"`
	Items            json.RawMessage `json:"items"`
}

// Decode returns the chunks of one line of `codex exec --json`.
func (d *CodexDecoder) Decode(raw []byte) ([]ops.Chunk, error) {
	raw = []byte(strings.TrimSpace(string(raw)))
	if len(raw) == 0 {
		return nil, nil
	}
	var l codexLine
	if raw[0] != '{' || json.Unmarshal(raw, &l) != nil {
		return nil, ErrNotJSON
	}
	switch l.Type {
	case "thread.started":
		return []ops.Chunk{{Kind: ops.ChunkSystem, Metadata: map[string]any{"subtype": "init", ops.MetaSessionID: l.ThreadID}}}, nil
	case "turn.started":
		return []ops.Chunk{{Kind: ops.ChunkSystem, Metadata: map[string]any{"subtype": "turn_started"}}}, nil
	case "turn.completed":
		md := map[string]any{"subtype": "success"}
		if v := decodeAny(l.Usage); v != nil {
			md["usage"] = v
		}
		return []ops.Chunk{{Kind: ops.ChunkResult, Metadata: md}}, nil
	case "item.started", "item.updated", "item.completed":
		if l.Item == nil {
			return nil, nil
		}
		return d.item(l.Type, l.Item), nil
	case "error", "turn.failed":
		return d.claude.Decode(raw)
	}
	return nil, nil
}

func (d *CodexDecoder) item(event string, it *codexItem) []ops.Chunk {
	done := event == "item.completed"
	switch it.Type {
	case "agent_message":
		if done && it.Text != "" {
			return []ops.Chunk{{Kind: ops.ChunkText, Content: it.Text}}
		}
		return nil
	case "reasoning":
		if done && strings.TrimSpace(it.Text) != "" {
			return []ops.Chunk{{Kind: ops.ChunkThinking, Content: strings.TrimSpace(it.Text)}}
		}
		return nil
	case "error":
		// A warning of the CLI's (an item, not the end of the turn).
		return []ops.Chunk{{Kind: ops.ChunkSystem, Metadata: map[string]any{"subtype": "warning", "message": it.Message}}}
	case "todo_list":
		return []ops.Chunk{{Kind: ops.ChunkSystem, Metadata: map[string]any{"subtype": "todo_list", "items": decodeAny(it.Items)}}}
	case "command_execution", "file_change", "mcp_tool_call", "web_search":
	default:
		return nil
	}
	if event == "item.updated" {
		return nil
	}
	var out []ops.Chunk
	if !d.started[it.ID] {
		if d.started == nil {
			d.started = map[string]bool{}
		}
		d.started[it.ID] = true
		out = append(out, ops.Chunk{Kind: ops.ChunkToolUse, ToolID: it.ID, ToolName: codexToolName(it), ToolInput: codexToolInput(it)})
	}
	if done {
		out = append(out, codexToolResult(it))
	}
	return out
}

func codexToolName(it *codexItem) string {
	if it.Type == "mcp_tool_call" && it.Tool != "" {
		if it.Server != "" {
			return it.Server + "." + it.Tool
		}
		return it.Tool
	}
	return it.Type
}

func codexToolInput(it *codexItem) map[string]any {
	switch it.Type {
	case "command_execution":
		return map[string]any{"command": it.Command}
	case "file_change":
		return map[string]any{"changes": decodeAny(it.Changes)}
	case "web_search":
		return map[string]any{"query": it.Query}
	}
	in, _ := decodeAny(it.Arguments).(map[string]any)
	return in
}

func codexToolResult(it *codexItem) ops.Chunk {
	c := ops.Chunk{Kind: ops.ChunkToolResult, ToolID: it.ID, Metadata: map[string]any{"status": it.Status}}
	switch it.Type {
	case "command_execution":
		if it.AggregatedOutput != nil {
			c.ToolOutput = *it.AggregatedOutput
		}
		if it.ExitCode != nil {
			c.Metadata["exit_code"] = *it.ExitCode
			c.IsError = *it.ExitCode != 0
		}
	case "file_change":
		c.ToolOutput = decodeAny(it.Changes)
	case "mcp_tool_call":
		c.ToolOutput = decodeAny(it.Result)
		if e := decodeAny(it.Error); e != nil {
			c.ToolOutput, c.IsError = e, true
		}
	}
	if it.Status == "failed" || it.Status == "declined" {
		c.IsError = true
	}
	return c
}
