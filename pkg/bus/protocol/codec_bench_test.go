package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/wire"
)

// BenchmarkDecodeRequest decodes and validates a request with about 1 KB of
// data in each content mode.
func BenchmarkDecodeRequest(b *testing.B) {
	codec := newCodec(b, provision.Config{})
	data, err := json.Marshal(map[string]any{
		"instruction": strings.Repeat("Summarise the quarterly report. ", 20),
		"context":     map[string]any{"region": "EMEA", "year": 2026, "tags": []string{"finance", "q3", "draft"}},
		"guidance":    strings.Repeat("Be brief. ", 30),
	})
	if err != nil {
		b.Fatal(err)
	}
	ev, err := protocol.EventBuilder{Source: "/bench"}.Request("op.summarise", "branch-1", "", "", json.RawMessage(data))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []protocol.Mode{protocol.Structured, protocol.Binary} {
		b.Run(mode.String(), func(b *testing.B) {
			msg, err := protocol.Encode("lion.ops.op.summarise", ev, mode)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(msg.Data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := codec.DecodeRequest(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode encodes the same request in each content mode.
func BenchmarkEncode(b *testing.B) {
	ev, err := protocol.EventBuilder{Source: "/bench"}.Request("op.summarise", "branch-1", "", "",
		json.RawMessage(`{"instruction":"`+strings.Repeat("x", 1000)+`"}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []protocol.Mode{protocol.Structured, protocol.Binary} {
		b.Run(mode.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := protocol.Encode("lion.ops.op.summarise", ev, mode); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSignal builds and encodes a message.added signal event the
// way the worker's signal sink does, for each of a communicate's
// messages.
func BenchmarkSignal(b *testing.B) {
	s := wire.Signal{
		Type: wire.SignalMessageAdded, Verb: "communicate", BranchID: "b1",
		RequestID: "6f8baefd-0b84-4bf1-b222-a14d6f42dba1", Time: time.Now(),
		Message: &wire.Message{
			ID: "ca9e7752-d847-4d66-84c9-611e9f55e6aa", Kind: "assistant_response", Role: "assistant",
			Sender: "assistant", Recipient: "user", CreatedAt: time.Now(),
			Content: map[string]any{"assistant_response": "Say hello in one short sentence."},
		},
	}
	builder := protocol.EventBuilder{Source: "/lionbus/worker/bench"}
	tp := protocol.NewTraceParent()
	b.ReportAllocs()
	for b.Loop() {
		ev, token, err := builder.Signal(s, tp, "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := protocol.Encode("lion.events.b1."+token, ev, protocol.Structured); err != nil {
			b.Fatal(err)
		}
	}
}
