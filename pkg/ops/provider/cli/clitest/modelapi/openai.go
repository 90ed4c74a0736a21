package modelapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// NewOpenAI starts a server of the OpenAI Responses API
// (POST /v1/responses, streamed as server-sent events), which the Codex
// CLI uses through a model provider whose base_url is URL+"/v1".
func NewOpenAI(t testing.TB, script Script) *Server {
	return start(t, script, func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/responses", s.openaiResponses)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
		return mux
	})
}

type openaiItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

func (s *Server) openaiResponses(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model string          `json:"model"`
		Tools []any           `json:"tools"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var items []openaiItem
	_ = json.Unmarshal(req.Input, &items)
	x := Exchange{Path: r.URL.Path, Model: req.Model, Tools: len(req.Tools), Body: body, ToolResults: map[string]string{}}
	for _, it := range items {
		switch {
		case it.Type == "function_call_output":
			var str string
			if json.Unmarshal(it.Output, &str) != nil {
				str = string(it.Output)
			}
			x.ToolResults[it.CallID] = str
		case it.Role == "user":
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			_ = json.Unmarshal(it.Content, &parts)
			var texts []string
			for _, p := range parts {
				if p.Text != "" && !cliNote(p.Text) {
					texts = append(texts, p.Text)
				}
			}
			if len(texts) > 0 {
				x.Prompt = strings.Join(texts, "\n")
				x.UserTexts = append(x.UserTexts, x.Prompt)
			}
		}
	}
	rep := s.record(x)
	if rep.Error != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Error.Status)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": rep.Error.Message, "type": "invalid_request_error", "code": "lionbus_scripted"}})
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
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
	respID := fmt.Sprintf("resp_lb_%d", n)
	send("response.created", map[string]any{"response": map[string]any{"id": respID, "status": "in_progress"}})
	idx := 0
	if rep.Text != "" {
		id := fmt.Sprintf("msg_lb_%d", n)
		send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
		for _, p := range pieces(rep.Text, 6) {
			send("response.output_text.delta", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "delta": p})
		}
		send("response.output_item.done", map[string]any{"output_index": idx, "item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}}})
		idx++
	}
	if rep.Tool != nil {
		args, _ := json.Marshal(rep.Tool.Input)
		item := map[string]any{"type": "function_call", "id": "fc_" + rep.Tool.ID, "call_id": rep.Tool.ID, "name": rep.Tool.Name, "arguments": ""}
		send("response.output_item.added", map[string]any{"output_index": idx, "item": item})
		send("response.function_call_arguments.delta", map[string]any{"item_id": "fc_" + rep.Tool.ID, "output_index": idx, "delta": string(args)})
		done := map[string]any{"type": "function_call", "id": "fc_" + rep.Tool.ID, "call_id": rep.Tool.ID, "name": rep.Tool.Name, "arguments": string(args), "status": "completed"}
		send("response.output_item.done", map[string]any{"output_index": idx, "item": done})
	}
	send("response.completed", map[string]any{"response": map[string]any{"id": respID, "status": "completed",
		"usage": map[string]any{"input_tokens": 20 + len(body)/100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 7, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 27 + len(body)/100}}})
}
