package tools

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/wire"
)

// FuzzReadAnswer: an answer event is read, or refused with an error,
// never a panic; one that is read is a lionbus.approval.answer whose data
// decoded.
func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte(`{"specversion":"1.0","id":"a-1","source":"/console","type":"lionbus.approval.answer","datacontenttype":"application/json","data":{"decision":"approve","arguments_digest":"00"}}`), "")
	f.Add([]byte(`{"specversion":"1.0","id":"a-2","source":"/c","type":"lionbus.approval.answer","data":{"decision":"deny","arguments":{"a":[1,2]}}}`), "")
	f.Add([]byte(`{"decision":"approve"}`), "1.0")
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"lionbus.tool.result","data":{}}`), "")
	f.Fuzz(func(t *testing.T, body []byte, ceVersion string) {
		h := nats.Header{}
		if ceVersion != "" {
			h.Set("ce-specversion", ceVersion)
			h.Set("ce-id", "b-1")
			h.Set("ce-source", "/bin")
			h.Set("ce-type", wire.ApprovalAnswerType)
			h.Set("Content-Type", "application/json")
		}
		ev, _, err := readAnswer(h, body)
		if err == nil && (ev == nil || ev.Type() != wire.ApprovalAnswerType) {
			t.Fatalf("read %v as an answer", ev)
		}
	})
}
