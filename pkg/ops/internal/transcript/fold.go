// Package transcript folds the chunk stream of a CLI model's run into the
// messages the run records, and classifies the error that ends a stream.
package transcript

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Stream control: an error chunk ends the stream as a failure, a benign
// one as a normal end.
var (
	ErrStreamFailed = errors.New("ops: the model reported an error in the stream")
	ErrBenignEOS    = errors.New("ops: the stream ended (benign_eos)")
)

// EmptyErrorText is what a stream error without text reports.
const EmptyErrorText = "(empty error)"

// Keys of the metadata of a run's chunks and messages.
const (
	MetaThinking  = "thinking"
	MetaSessionID = "session_id"
)

// Fold accumulates one run's stream of chunks into the messages the run
// records: assistant responses (with their thinking and the result
// metadata), action requests and responses paired by tool id, the
// provider session, usage and the error that ended the stream.
type Fold struct {
	// Model is the run's model, named on its responses.
	Model history.ModelRef
	// Clock stamps the messages.
	Clock func() time.Time
	// OnReconnect is told the notice of a stream that reconnects; nil
	// means nothing is told.
	OnReconnect func(notice string)
	// Totals are the keys of the result chunks' metadata whose numbers
	// add up over a response, as the provider names them; other keys are
	// overwritten. The numbers of "usage" always add up.
	Totals []string

	// Msgs are the messages recorded so far.
	Msgs []history.Message
	// Responses are the texts of the assistant responses, in order.
	Responses []string
	// Session is the provider session the chunks named, if any.
	Session string
	// Usage sums the result chunks' token usage.
	Usage *wire.Usage
	// Failure is the error chunk's text, when one ended the stream.
	Failure string
	// Chunks counts the chunks taken.
	Chunks uint64

	text     strings.Builder
	thinking []string
	meta     map[string]any
	pending  map[string]int // tool_id → index of its action request in Msgs
}

// Flush records the accumulated text as an assistant response, with the
// thinking and the result metadata; without text it records nothing and
// keeps them pending.
func (s *Fold) Flush() {
	if s.text.Len() == 0 {
		return
	}
	text := s.text.String()
	m := history.NewAssistantResponse(text, nil, s.Clock())
	m.Metadata = map[string]any{history.MetaModel: s.Model.String()}
	if len(s.thinking) > 0 {
		m.Metadata[MetaThinking] = strings.Join(s.thinking, "\n")
		s.thinking = nil
	}
	if len(s.meta) > 0 {
		m.Metadata[history.MetaModelResponse] = s.meta
		s.meta = nil
	}
	s.Msgs = append(s.Msgs, m)
	s.Responses = append(s.Responses, text)
	s.text.Reset()
}

// Take folds one chunk into the state. It returns ErrBenignEOS or
// ErrStreamFailed when the chunk ends the stream.
func (s *Fold) Take(c wire.Chunk) error {
	s.Chunks++
	switch c.Kind {
	case wire.ChunkSystem:
		if id, _ := c.Metadata[MetaSessionID].(string); id != "" {
			s.Session = id
		}
	case wire.ChunkThinking:
		if c.Content != "" {
			s.thinking = append(s.thinking, c.Content)
		}
	case wire.ChunkText:
		s.text.WriteString(c.Content)
	case wire.ChunkToolUse:
		s.Flush()
		m := history.NewActionRequest(c.ToolName, c.ToolInput, s.Clock())
		if c.ToolID != "" {
			m.Metadata = map[string]any{"tool_id": c.ToolID}
			if s.pending == nil {
				s.pending = map[string]int{}
			}
			s.pending[c.ToolID] = len(s.Msgs)
		}
		s.Msgs = append(s.Msgs, m)
	case wire.ChunkToolResult:
		i, ok := s.pending[c.ToolID]
		if !ok || c.ToolID == "" {
			return nil // an unmatched result is ignored
		}
		delete(s.pending, c.ToolID)
		errText := ""
		if c.IsError {
			errText = "the tool reported an error"
		}
		m := history.NewActionResponse(&s.Msgs[i], c.ToolOutput, errText, s.Clock())
		if c.IsError {
			m.Metadata = map[string]any{"is_error": true}
		}
		s.Msgs = append(s.Msgs, m)
	case wire.ChunkResult:
		s.mergeResult(c.Metadata)
		if id, _ := c.Metadata[MetaSessionID].(string); id != "" {
			s.Session = id
		}
	case wire.ChunkError:
		switch c.End() {
		case wire.EndBenign:
			return ErrBenignEOS
		case wire.EndNotice:
			if s.OnReconnect != nil {
				s.OnReconnect(c.Content)
			}
			return nil
		}
		s.Flush()
		s.Failure = c.Content
		if strings.TrimSpace(s.Failure) == "" {
			s.Failure = EmptyErrorText
		}
		return ErrStreamFailed
	}
	return nil
}

// mergeResult merges a result chunk's metadata: numeric usage fields and
// the numbers of the Totals keys are summed, other keys overwritten.
func (s *Fold) mergeResult(md map[string]any) {
	if len(md) == 0 {
		return
	}
	if s.meta == nil {
		s.meta = map[string]any{}
	}
	for k, v := range md {
		switch k {
		case "usage":
			u, _ := v.(map[string]any)
			old, _ := s.meta[k].(map[string]any)
			if old == nil {
				old = map[string]any{}
			}
			for uk, uv := range u {
				if n, ok := jsonval.Number(uv); ok {
					o, _ := jsonval.Number(old[uk])
					old[uk] = o + n
				} else {
					old[uk] = jsonval.Copy(uv)
				}
			}
			s.meta[k] = old
			s.addUsage(u)
		default:
			if n, ok := jsonval.Number(v); ok && slices.Contains(s.Totals, k) {
				o, _ := jsonval.Number(s.meta[k])
				s.meta[k] = o + n
				continue
			}
			s.meta[k] = jsonval.Copy(v)
		}
	}
}

func (s *Fold) addUsage(u map[string]any) {
	in, okIn := jsonval.Number(u["input_tokens"])
	out, okOut := jsonval.Number(u["output_tokens"])
	if !okIn && !okOut {
		return
	}
	if s.Usage == nil {
		s.Usage = &wire.Usage{}
	}
	s.Usage.InputTokens += int(in)
	s.Usage.OutputTokens += int(out)
	s.Usage.TotalTokens += int(in + out)
}

// MarkSession records, on every message the run recorded, the provider
// session that holds it (metadata session_id), so that a later run
// resuming the session sends only what came after (see pkg/ops afterSession).
func (s *Fold) MarkSession() {
	if s.Session == "" {
		return
	}
	for i := range s.Msgs {
		if s.Msgs[i].Metadata == nil {
			s.Msgs[i].Metadata = map[string]any{}
		}
		s.Msgs[i].Metadata[MetaSessionID] = s.Session
	}
}

// JoinResponses joins the non-empty texts with a blank line.
func JoinResponses(texts []string) string {
	var parts []string
	for _, t := range texts {
		if strings.TrimSpace(t) != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// providerErrorKinds classify a stream error's text by pattern, as the
// reference's classify_provider_error does.
var providerErrorKinds = []struct {
	kind     string
	patterns []string
}{
	{"quota", []string{"quota", "billing", "credit balance", "rate limit", "rate_limit", "429"}},
	{"auth", []string{"authentication", "unauthorized", "invalid api key", "api key", "401", "login"}},
	{"context", []string{"context length", "context window", "too many tokens", "prompt is too long"}},
	{"capacity", []string{"overloaded", "capacity", "529", "503", "unavailable"}},
	{"unsupported_model", []string{"model not found", "unsupported model", "unknown model", "not_found_error"}},
	{"safety", []string{"safety", "content policy", "refus"}},
	{"stream_disconnect", []string{"disconnect", "connection reset", "broken pipe", "eof"}},
	{"permission", []string{"permission", "forbidden", "403"}},
}

// ClassifyError returns the message of a classified provider error
// for text: "provider P (kind): text".
func ClassifyError(provider, text string) string {
	if strings.TrimSpace(text) == "" {
		text = EmptyErrorText
	}
	low := strings.ToLower(text)
	kind := "provider_error"
	for _, k := range providerErrorKinds {
		for _, p := range k.patterns {
			if strings.Contains(low, p) {
				kind = k.kind
				break
			}
		}
		if kind != "provider_error" {
			break
		}
	}
	return fmt.Sprintf("provider %s (%s): %s", provider, kind, wire.Truncate(text, 2000))
}
