package protocol_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/schemas"
	"github.com/nats-io/nats.go"
)

// fuzzHeader parses "Key: value" lines into a header.
func fuzzHeader(s string) nats.Header {
	if s == "" {
		return nil
	}
	h := nats.Header{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || k == "" {
			continue
		}
		h[k] = append(h[k], v)
	}
	return h
}

var knownCodes = []ops.Code{
	protocol.CodeMalformedEvent, protocol.CodeMissingAttribute, protocol.CodeUnsupportedSpecVersion,
	protocol.CodeUnknownType, protocol.CodeInvalidData, protocol.CodeInvalidBranchID,
	protocol.CodeMissingBranchID, protocol.CodeInvalidAttribute, protocol.CodePayloadTooLarge,
}

// FuzzDecode feeds arbitrary headers and bodies to the request decoder. It
// must never panic; it either rejects the message with a known code or
// returns a request whose id is a token, whose data is JSON, and which
// survives a re-encoding in both modes unchanged.
func FuzzDecode(f *testing.F) {
	f.Add("", []byte(`{"specversion":"1.0","id":"a","source":"/s","type":"lionbus.op.echo.request","data":{}}`))
	f.Add("Content-Type: application/cloudevents+json", []byte(`{"specversion":"1.0","id":"a","source":"/s","type":"lionbus.op.echo.request","data_base64":"e30="}`))
	f.Add("ce-specversion: 1.0\nce-id: b\nce-source: %2Fs\nce-type: lionbus.op.echo.request\nce-branchid: \"br\"", []byte(`{"x":1}`))
	f.Add("CE-SPECVERSION: 1.0\nce-note: Euro%20%E2%82%AC%20%F0%9F%98%80\nce-bad: %C0%A0", []byte(`{}`))
	f.Add("Content-Type: application/json", []byte("\x00\xff garbage"))

	codec, err := protocol.NewCodec(protocol.CodecConfig{MaxPayload: 64 << 10, Validator: schemas.Validator{}})
	if err != nil {
		f.Fatal(err)
	}
	const subject = "lion.ops.op.echo"
	f.Fuzz(func(t *testing.T, hdr string, body []byte) {
		h := fuzzHeader(hdr)
		if _, err := codec.DecodeEvent(h, body); err != nil && !errors.Is(err, protocol.ErrBadEvent) {
			t.Fatalf("DecodeEvent error %v is not a bad-event error", err)
		}
		req, err := codec.DecodeRequest(&nats.Msg{Subject: subject, Header: h, Data: body})
		if err != nil {
			var ee *protocol.EventError
			if !errors.As(err, &ee) {
				t.Fatalf("error %T %v is not an *EventError", err, err)
			}
			if !slices.Contains(knownCodes, ee.Code) || ee.Message == "" {
				t.Fatalf("EventError %+v: unknown code or empty message", ee)
			}
			if ee.ID != "" && !protocol.ValidToken(ee.ID) {
				t.Fatalf("EventError.ID %q is not a token", ee.ID)
			}
			return
		}
		if !protocol.ValidToken(req.ID()) || req.Verb != "op.echo" || !json.Valid(req.Data) {
			t.Fatalf("accepted request: id %q verb %q data %q", req.ID(), req.Verb, req.Data)
		}
		if !protocol.ValidTraceParent(req.TraceParent) || req.ReplyTo == "" {
			t.Fatalf("accepted request: trace %q reply %q", req.TraceParent, req.ReplyTo)
		}
		for _, mode := range []protocol.Mode{protocol.Structured, protocol.Binary} {
			msg, err := protocol.Encode(subject, &req.Event, mode)
			if err != nil {
				t.Fatalf("re-encode %v: %v", mode, err)
			}
			again, err := codec.DecodeRequest(msg)
			if err != nil {
				// Re-encoding may grow the message past the limit.
				var ee *protocol.EventError
				if errors.As(err, &ee) && ee.Code == protocol.CodePayloadTooLarge {
					continue
				}
				t.Fatalf("decode re-encoded %v: %v\nheaders %v\nbody %q", mode, err, msg.Header, msg.Data)
			}
			if again.ID() != req.ID() || again.BranchID != req.BranchID || again.ReplyTo != req.ReplyTo ||
				!jsonEqual(again.Data, req.Data) {
				t.Fatalf("%v round trip changed the request:\n%+v\n%+v", mode, again, req)
			}
			if a, b := again.Event.Extensions(), req.Event.Extensions(); len(a) != len(b) {
				t.Fatalf("%v round trip changed extensions: %v vs %v", mode, a, b)
			}
		}
	})
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
