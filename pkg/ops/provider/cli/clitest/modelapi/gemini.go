package modelapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// NewGemini starts a server of the Gemini API's
// models/{model}:streamGenerateContent (server-sent events with
// alt=sse), which the Gemini CLI uses with GOOGLE_GEMINI_BASE_URL set to
// its URL and an API key.
func NewGemini(t testing.TB, script Script) *Server {
	return start(t, script, func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("/", s.gemini)
		return mux
	})
}

type geminiPart struct {
	Text             string `json:"text"`
	Thought          bool   `json:"thought"`
	FunctionResponse *struct {
		ID       string         `json:"id"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	} `json:"functionResponse"`
}

func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := r.URL.Path
	model := path[strings.LastIndex(path, "/")+1:]
	model, method, _ := strings.Cut(model, ":")
	if method == "countTokens" {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"totalTokens": 10}`))
		return
	}
	var req struct {
		Contents []struct {
			Role  string       `json:"role"`
			Parts []geminiPart `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []any `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	x := Exchange{Path: path, Model: model, Body: body, ToolResults: map[string]string{}}
	for _, t := range req.Tools {
		x.Tools += len(t.FunctionDeclarations)
	}
	for _, c := range req.Contents {
		if c.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				b, _ := json.Marshal(p.FunctionResponse.Response)
				id := p.FunctionResponse.ID
				if id == "" {
					id = p.FunctionResponse.Name
				}
				x.ToolResults[id] = string(b)
			} else if p.Text != "" && !cliNote(p.Text) {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) > 0 {
			x.Prompt = strings.Join(texts, "\n")
			x.UserTexts = append(x.UserTexts, x.Prompt)
		}
	}
	rep := s.record(x)
	if rep.Error != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Error.Status)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": rep.Error.Status, "message": rep.Error.Message, "status": "INVALID_ARGUMENT"}})
		w.Write(b)
		return
	}
	usage := map[string]any{"promptTokenCount": 20 + len(body)/100, "candidatesTokenCount": 7, "totalTokenCount": 27 + len(body)/100}
	chunk := func(parts []any, finish string) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		return map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": model}
	}
	var out []map[string]any
	for _, p := range pieces(rep.Text, 6) {
		out = append(out, chunk([]any{map[string]any{"text": p}}, ""))
	}
	if rep.Tool != nil {
		out = append(out, chunk([]any{map[string]any{"functionCall": map[string]any{"id": rep.Tool.ID, "name": rep.Tool.Name, "args": rep.Tool.Input}}}, ""))
	}
	if len(out) == 0 {
		out = append(out, chunk([]any{map[string]any{"text": ""}}, ""))
	}
	out[len(out)-1] = chunk(out[len(out)-1]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any), "STOP")
	if method != "streamGenerateContent" {
		// generateContent: one answer, the parts joined.
		var parts []any
		for _, c := range out {
			parts = append(parts, c["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)...)
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(chunk(parts, "STOP"))
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for _, c := range out {
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}
