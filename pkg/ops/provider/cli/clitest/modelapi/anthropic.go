package modelapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// NewAnthropic starts a server of the Anthropic Messages API
// (POST /v1/messages, streamed as server-sent events), which Claude Code
// uses with ANTHROPIC_BASE_URL set to its URL.
func NewAnthropic(t testing.TB, script Script) *Server {
	return start(t, script, func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/messages", s.anthropicMessages)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
		return mux
	})
}

// anthropicRequest is the part of a Messages request read here.
type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Tools    []any  `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// blockText is the text of a string or a list of text blocks.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(raw, &bs)
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	x := Exchange{Path: r.URL.Path, Model: req.Model, Tools: len(req.Tools), Body: body, ToolResults: map[string]string{}}
	for i, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var bs []anthropicBlock
		if json.Unmarshal(m.Content, &bs) != nil {
			var str string
			_ = json.Unmarshal(m.Content, &str)
			bs = []anthropicBlock{{Type: "text", Text: str}}
		}
		var texts []string
		for _, b := range bs {
			switch b.Type {
			case "text":
				if !cliNote(b.Text) {
					texts = append(texts, b.Text)
				}
			case "tool_result":
				x.ToolResults[b.ToolUseID] = blockText(b.Content)
			}
		}
		if len(texts) > 0 {
			t := strings.Join(texts, "\n")
			x.UserTexts = append(x.UserTexts, t)
			if i == len(req.Messages)-1 || lastUser(req.Messages, i) {
				x.Prompt = t
			}
		}
	}
	rep := s.record(x)
	if rep.Error != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Error.Status)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": rep.Error.Message}})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(typ string, data map[string]any) {
		data["type"] = typ
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if fl != nil {
			fl.Flush()
		}
	}
	n := len(s.Exchanges())
	send("message_start", map[string]any{"message": map[string]any{
		"id": fmt.Sprintf("msg_lb_%d", n), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 20 + len(body)/100, "output_tokens": 1},
	}})
	idx := 0
	if rep.Text != "" {
		send("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(rep.Text, 6) {
			send("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		send("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	stop := "end_turn"
	if rep.Tool != nil {
		stop = "tool_use"
		send("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "tool_use", "id": rep.Tool.ID, "name": rep.Tool.Name, "input": map[string]any{}}})
		in, _ := json.Marshal(rep.Tool.Input)
		for _, p := range pieces(string(in), 10) {
			send("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		send("content_block_stop", map[string]any{"index": idx})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 7}})
	send("message_stop", map[string]any{})
}

// lastUser reports whether message i is the last user message.
func lastUser(ms []struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}, i int) bool {
	for j := i + 1; j < len(ms); j++ {
		if ms[j].Role == "user" {
			return false
		}
	}
	return true
}
