package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
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
