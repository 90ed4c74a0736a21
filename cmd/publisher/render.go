package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// lineWidth bounds one rendered message line.
const lineWidth = 100

// verbOf returns the verb of a result type: "lionbus.branch.get.result" is
// "branch.get".
func verbOf(typ string) string {
	v := strings.TrimPrefix(typ, protocol.EventTypePrefix)
	return strings.TrimSuffix(v, ".result")
}

// renderResult prints a result for a human. Branch results show the branch, a
// history page shows its events, act its responses, react its analysis
// rounds (when it has them) before its answer, other results their value:
// a string as its text, anything else as indented JSON.
func renderResult(w io.Writer, verb string, res *wire.Result) {
	switch verb {
	case "branch.forks":
		var page wire.ForkPage
		if err := json.Unmarshal(res.Value, &page); err == nil {
			for _, f := range page.Forks {
				fmt.Fprintf(w, "%s  at seq %d  (%s, request %s)\n", f.BranchID, f.Seq, f.Time.Format("2006-01-02 15:04:05"), f.RequestID)
			}
			if page.More {
				fmt.Fprintf(w, "more: --after %d\n", page.Next)
			}
			return
		}
	case "branch.fork":
		var f wire.BranchForked
		if err := json.Unmarshal(res.Value, &f); err == nil && f.BranchID != "" {
			fmt.Fprintf(w, "branch %s  (%d messages, history seq %d)\n  fork of:     %s at seq %d\n", f.BranchID, f.Messages, f.Seq, f.Fork.BranchID, f.Fork.Seq)
			return
		}
	case "branch.create", "branch.get", "branch.clone", "branch.clear":
		var b wire.Branch
		if err := json.Unmarshal(res.Value, &b); err == nil && b.ID != "" {
			renderBranch(w, &b)
			return
		}
	case "branch.history":
		var page struct {
			Events []wire.Event `json:"events"`
			Next   uint64       `json:"next"`
			More   bool         `json:"more"`
		}
		if err := json.Unmarshal(res.Value, &page); err == nil {
			renderHistory(w, page.Events, page.Next, page.More)
			return
		}
	case "branch.delete":
		fmt.Fprintf(w, "branch %s deleted\n", res.BranchID)
		return
	case "act":
		if renderActions(w, res.Value) {
			return
		}
	case "react":
		var extra wire.ReactExtra
		if res.DecodeExtra(&extra) == nil {
			renderAnalyses(w, extra.Analyses)
		}
	}
	fmt.Fprintln(w, valueText(res.Value))
}

func renderBranch(w io.Writer, b *wire.Branch) {
	fmt.Fprintf(w, "branch %s  (%d messages, history seq %d)\n", b.ID, len(b.Messages), b.Seq)
	if b.Fork != nil {
		fmt.Fprintf(w, "  fork of:     %s at seq %d\n", b.Fork.BranchID, b.Fork.Seq)
	}
	if b.Settings.ChatModel != nil {
		fmt.Fprintf(w, "  chat model:  %s\n", modelText(b.Settings.ChatModel))
	}
	if b.Settings.ParseModel != nil {
		fmt.Fprintf(w, "  parse model: %s\n", modelText(b.Settings.ParseModel))
	}
	if len(b.Settings.Tools) > 0 {
		fmt.Fprintf(w, "  tools:       %s\n", strings.Join(b.Settings.Tools, ", "))
	}
	for _, m := range b.Messages {
		fmt.Fprintf(w, "  %-10s %s\n", m.Role, messageText(m))
	}
}

func renderHistory(w io.Writer, events []wire.Event, next uint64, more bool) {
	for _, ev := range events {
		fmt.Fprintf(w, "#%-4d %s  %s\n", ev.Seq, ev.Time.Format("2006-01-02 15:04:05"), ev.Type)
		for _, m := range ev.Messages {
			fmt.Fprintf(w, "      %-10s %s\n", m.Role, messageText(m))
		}
	}
	if more {
		fmt.Fprintf(w, "(more: --after %d)\n", next)
	}
}

// modelText renders a model reference: "provider:model", or its JSON
// object form when it has options.
func modelText(m *wire.ModelRef) string {
	b, err := json.Marshal(m)
	if err != nil {
		return m.String()
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return render.Clip(string(b), lineWidth)
}

// valueText renders a result value: a JSON string as its text, anything
// else as indented JSON.
func valueText(raw json.RawMessage) string { return render.IndentedValue(raw) }

// messageText is the one-line gist of a recorded message, at most
// lineWidth runes.
func messageText(m wire.Message) string { return render.Clip(render.MessageText(m), lineWidth) }
