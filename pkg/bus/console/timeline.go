package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

// entry is one history event on a branch's timeline.
type entry struct {
	Seq        uint64
	Type       wire.EventType
	RequestID  string
	Time       time.Time
	ModelCalls uint64
	Settings   *wire.Settings
	System     string // the settings' system message, when no message holds it
	Messages   []message
	Fork       *wire.ForkPoint
	// Of the operation's result, on branch.messages: its value (a
	// structured result is indented JSON), usage, duration and error.
	Value      string
	Usage      *wire.Usage
	DurationMS int64
	Error      string
	// A parked tool call (branch.approval_requested), with its
	// arguments indented.
	Approval     *wire.ApprovalRequest
	ApprovalArgs string
	// A compaction point (branch.compacted).
	Compaction *wire.Compaction
}

// message is one recorded message as the timeline shows it.
type message struct {
	ID, Kind, Role string
	Time           time.Time
	Text           string // the text of a system message, instruction or response
	Function       string // of a tool call
	Arguments      string // of a tool call, indented JSON
	Output         string // of a tool result, indented JSON or text
	Error          string // of a failed tool call
	Model          string // the model that answered, when recorded
}

// resultView is what the timeline reads of an operation's result.
type resultView struct {
	Value      json.RawMessage `json:"value"`
	Usage      *wire.Usage     `json:"usage"`
	DurationMS int64           `json:"duration_ms"`
	Error      *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// timeline turns history events into timeline entries and sums the usage
// of their operations.
func timeline(events []wire.Event) ([]entry, wire.Usage) {
	var total wire.Usage
	out := make([]entry, 0, len(events))
	for _, ev := range events {
		e := entry{Seq: ev.Seq, Type: ev.Type, RequestID: ev.RequestID, Time: ev.Time, ModelCalls: ev.ModelCalls, Settings: ev.Settings, Fork: ev.Fork,
			Approval: ev.Approval, Compaction: ev.Compaction}
		if ev.Approval != nil {
			e.ApprovalArgs = indented(ev.Approval.Arguments)
		}
		hasSystem := false
		for _, m := range ev.Messages {
			e.Messages = append(e.Messages, messageOf(m))
			hasSystem = hasSystem || m.Kind == wire.KindSystem
		}
		if ev.Settings != nil && !hasSystem {
			e.System = ev.Settings.System
		}
		if len(ev.Result) > 0 {
			var r resultView
			if json.Unmarshal(ev.Result, &r) == nil {
				e.Value = valueText(r.Value)
				e.Usage, e.DurationMS = r.Usage, r.DurationMS
				if r.Error != nil {
					e.Error = r.Error.Code + ": " + r.Error.Message
				}
				if r.Usage != nil {
					total.InputTokens += r.Usage.InputTokens
					total.OutputTokens += r.Usage.OutputTokens
					total.TotalTokens += r.Usage.TotalTokens
					total.CostUSD += r.Usage.CostUSD
				}
			}
		}
		out = append(out, e)
	}
	return out, total
}

// messageOf is m as the timeline shows it.
func messageOf(m wire.Message) message {
	v := message{ID: m.ID, Kind: string(m.Kind), Role: string(m.Role), Time: m.CreatedAt}
	switch m.Kind {
	case wire.KindSystem:
		v.Text = text(m.Content[wire.KeySystemMessage])
	case wire.KindInstruction:
		parts := []string{text(m.Content[wire.KeyInstruction])}
		for _, k := range []string{wire.KeyGuidance, wire.KeyContext, wire.KeyPlainContent} {
			if c, ok := m.Content[k]; ok && c != nil && c != "" {
				parts = append(parts, k+": "+text(c))
			}
		}
		v.Text = strings.Join(parts, "\n")
	case wire.KindAssistantResponse:
		v.Text = text(m.Content[wire.KeyAssistantResponse])
	case wire.KindActionRequest:
		v.Function = text(m.Content[wire.KeyFunction])
		v.Arguments = indented(m.Content[wire.KeyArguments])
	case wire.KindActionResponse:
		v.Function = text(m.Content[wire.KeyFunction])
		v.Arguments = indented(m.Content[wire.KeyArguments])
		if e, ok := m.Content[wire.KeyError]; ok && e != nil && e != "" {
			v.Error = text(e)
		} else {
			v.Output = indented(m.Content[wire.KeyOutput])
		}
	default:
		v.Text = indented(m.Content)
	}
	if model, ok := m.Metadata["model"]; ok {
		v.Model = text(model)
	}
	return v
}

// text is v as text: a string as it is, anything else as JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// indented is v as indented JSON, a string as it is.
func indented(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// valueText is a result value: a JSON string as its text, anything else
// as indented JSON.
func valueText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
	},
	"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"percent": percent,
	"model":   modelText,
	"cost":    func(usd float64) string { return fmt.Sprintf("$%.6f", usd) },
	"dur": func(d time.Duration) string {
		if d <= 0 {
			return "–"
		}
		return d.Round(10 * time.Microsecond).String()
	},
	"short": func(s string) string {
		if len(s) > 13 {
			return s[:13] + "…"
		}
		return s
	},
}

// modelText is a model reference as text, "" for none.
func modelText(m *wire.ModelRef) string {
	if m == nil {
		return ""
	}
	if m.Model == "" {
		return m.Provider
	}
	return m.String()
}
