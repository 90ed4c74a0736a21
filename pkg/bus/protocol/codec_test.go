package protocol_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/schemas"
)

const testTrace = "00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01"

func newCodec(t testing.TB, cfg provision.Config) *protocol.Codec {
	t.Helper()
	c, err := protocol.NewCodec(protocol.CodecConfig{Prefix: cfg.Prefix, MaxPayload: cfg.MaxPayload, Validator: schemas.Validator{}})
	if err != nil {
		t.Fatalf("NewCodec: %v", err)
	}
	return c
}

// structured returns a structured-mode JSON event for the named operation
// "echo", with fields overriding (nil deletes) the defaults.
func structured(t testing.TB, fields map[string]any) []byte {
	t.Helper()
	ev := map[string]any{
		"specversion":     "1.0",
		"id":              "req-1",
		"source":          "/test",
		"type":            "lionbus.op.echo.request",
		"datacontenttype": "application/json",
		"data":            map[string]any{"text": "hello"},
	}
	for k, v := range fields {
		if v == nil {
			delete(ev, k)
		} else {
			ev[k] = v
		}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCodec_round_trip_through_NATS(t *testing.T) {
	t.Parallel()
	s := bustest.NewServer(t)
	nc, _ := bustest.Connect(t, s)
	codec := newCodec(t, provision.Config{})
	subj := codec.Subjects().Op("op.echo")

	for _, mode := range []protocol.Mode{protocol.Structured, protocol.Binary} {
		t.Run(mode.String(), func(t *testing.T) {
			sub, err := nc.SubscribeSync(subj)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()

			b := protocol.EventBuilder{Source: "/test/src"}
			data := json.RawMessage(`{"text":"Euro € 😀","n":[1,2,3]}`)
			ev, err := b.Request("op.echo", "br_1", "inbox.client-7", testTrace, data)
			if err != nil {
				t.Fatal(err)
			}
			ev.SetSubject("subj \"quoted\" 100%")
			ev.SetExtension("note", "Euro € 😀")
			msg, err := protocol.Encode(subj, ev, mode)
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.PublishMsg(msg); err != nil {
				t.Fatal(err)
			}
			got, err := sub.NextMsg(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			req, err := codec.DecodeRequest(got)
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			checks := []struct{ name, got, want string }{
				{"id", req.ID(), ev.ID()},
				{"verb", req.Verb, "op.echo"},
				{"branch", req.BranchID, "br_1"},
				{"reply", req.ReplyTo, "inbox.client-7"},
				{"trace", req.TraceParent, testTrace},
				{"source", req.Event.Source(), "/test/src"},
				{"subject", req.Event.Subject(), "subj \"quoted\" 100%"},
				{"note", req.Event.Extensions()["note"].(string), "Euro € 😀"},
				{"type", req.Event.Type(), "lionbus.op.echo.request"},
				{"time", req.Event.Time().Format(time.RFC3339Nano), ev.Time().Format(time.RFC3339Nano)},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
				}
			}
			if string(req.Data) != string(data) {
				t.Errorf("data = %s, want %s", req.Data, data)
			}
			if req.ID() != ev.ID() || req.Verb != "op.echo" || req.BranchID != "br_1" {
				t.Errorf("request = id %q verb %q branch %q", req.ID(), req.Verb, req.BranchID)
			}
		})
	}
}

func TestCodec_round_trip_through_JetStream(t *testing.T) {
	t.Parallel()
	s := bustest.NewServer(t)
	_, js := bustest.Connect(t, s)
	ctx := context.Background()
	res, err := provision.Ensure(ctx, js, provision.Config{})
	if err != nil {
		t.Fatal(err)
	}
	codec := newCodec(t, res.Config)
	b := protocol.EventBuilder{}
	want := map[string]protocol.Mode{}
	for _, mode := range []protocol.Mode{protocol.Structured, protocol.Binary} {
		ev, err := b.Request("op.echo", "", "", "", map[string]string{"mode": mode.String()})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := protocol.Encode(res.Subjects.Op("op.echo"), ev, mode)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
		// A second publish of the same event is dropped as a duplicate.
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil || !ack.Duplicate {
			t.Fatalf("republish: ack %+v, err %v; want a duplicate", ack, err)
		}
		want[ev.ID()] = mode
	}
	batch, err := res.Workers.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range batch.Messages() {
		n++
		req, err := codec.DecodeRequestJS(m)
		if err != nil {
			t.Fatalf("DecodeRequestJS: %v", err)
		}
		mode, ok := want[req.ID()]
		if !ok {
			t.Fatalf("unexpected request %s", req.ID())
		}
		if !strings.Contains(string(req.Data), mode.String()) {
			t.Errorf("%v request data = %s", mode, req.Data)
		}
		if req.ReplyTo != "lion.reply."+req.ID() {
			t.Errorf("ReplyTo = %q, want the default", req.ReplyTo)
		}
		_ = m.Ack()
	}
	if n != 2 {
		t.Errorf("fetched %d requests, want 2", n)
	}
}

func TestCodec_accepts_JSON_without_content_type(t *testing.T) {
	t.Parallel()
	s := bustest.NewServer(t)
	nc, _ := bustest.Connect(t, s)
	codec := newCodec(t, provision.Config{})
	sub, err := nc.SubscribeSync("lion.ops.op.echo")
	if err != nil {
		t.Fatal(err)
	}
	// What `nats pub lion.ops.op.echo "$(cat event.json)"` sends: no headers.
	if err := nc.Publish("lion.ops.op.echo", structured(t, nil)); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Header) != 0 {
		t.Fatalf("message has headers %v", msg.Header)
	}
	req, err := codec.DecodeRequest(msg)
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	if req.ID() != "req-1" || string(req.Data) != `{"text":"hello"}` {
		t.Errorf("request = %s %s", req.ID(), req.Data)
	}
	if !protocol.ValidTraceParent(req.TraceParent) {
		t.Errorf("TraceParent = %q, want a generated one", req.TraceParent)
	}
}

// A structured event labelled with a JSON Content-Type, as most JSON
// clients send it, is read as structured; with ce-specversion the same
// Content-Type is binary mode's data content type.
func TestCodec_JSON_content_type_without_ce_headers_is_structured(t *testing.T) {
	t.Parallel()
	codec := newCodec(t, provision.Config{})
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "text/json"} {
		msg := &nats.Msg{Subject: "lion.ops.op.echo", Header: nats.Header{"Content-Type": {ct}}, Data: structured(t, nil)}
		req, err := codec.DecodeRequest(msg)
		if err != nil {
			t.Fatalf("%s: DecodeRequest: %v", ct, err)
		}
		if req.ID() != "req-1" || string(req.Data) != `{"text":"hello"}` {
			t.Errorf("%s: request = %s %s", ct, req.ID(), req.Data)
		}
	}
	bin := nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"bin-1"}, "ce-source": {"/src"},
		"ce-type": {"lionbus.op.echo.request"}, "Content-Type": {"application/json"}}
	req, err := codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.op.echo", Header: bin, Data: []byte(`{"text":"bin"}`)})
	if err != nil || req.ID() != "bin-1" || string(req.Data) != `{"text":"bin"}` {
		t.Fatalf("binary with application/json: %v %v", req, err)
	}
}

func TestCodec_binary_headers_are_case_insensitive(t *testing.T) {
	t.Parallel()
	codec := newCodec(t, provision.Config{})
	msg := &nats.Msg{Subject: "lion.ops.op.echo", Data: []byte(`{"a":1}`), Header: nats.Header{
		"CE-SpecVersion": {"1.0"},
		"Ce-Id":          {"r2"},
		"ce-SOURCE":      {"%2Fsrc"},
		"cE-type":        {"lionbus.op.echo.request"},
		"Ce-Branchid":    {"b1"},
		"Ce-Traceparent": {"\"" + testTrace + "\""},
	}}
	req, err := codec.DecodeRequest(msg)
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	if req.ID() != "r2" || req.Event.Source() != "/src" || req.BranchID != "b1" || req.TraceParent != testTrace {
		t.Errorf("request = id %q source %q branch %q trace %q", req.ID(), req.Event.Source(), req.BranchID, req.TraceParent)
	}
}

func TestCodec_trace_from_plain_header(t *testing.T) {
	t.Parallel()
	codec := newCodec(t, provision.Config{})
	msg := &nats.Msg{Subject: "lion.ops.op.echo", Data: structured(t, nil),
		Header: nats.Header{"traceparent": {testTrace}, "tracestate": {"rojo=00f067aa0ba902b7"}}}
	req, err := codec.DecodeRequest(msg)
	if err != nil {
		t.Fatal(err)
	}
	if req.TraceParent != testTrace || req.TraceState != "rojo=00f067aa0ba902b7" {
		t.Errorf("TraceParent, TraceState = %q, %q; want the headers'", req.TraceParent, req.TraceState)
	}
}

func TestCodec_rejects_bad_input(t *testing.T) {
	t.Parallel()
	codec := newCodec(t, provision.Config{MaxPayload: 1024})
	const subj = "lion.ops.op.echo"
	ceJSON := nats.Header{"Content-Type": {protocol.ContentTypeCloudEventsJSON}}
	binary := func(extra map[string]string, drop ...string) nats.Header {
		h := nats.Header{
			"ce-specversion": {"1.0"},
			"ce-id":          {"bin-1"},
			"ce-source":      {"/test"},
			"ce-type":        {"lionbus.op.echo.request"},
		}
		for _, d := range drop {
			delete(h, d)
		}
		for k, v := range extra {
			h[k] = []string{v}
		}
		return h
	}
	tests := []struct {
		name    string
		subject string
		header  nats.Header
		body    []byte
		code    ops.Code
		inMsg   string // substring of the message
		id      string // expected EventError.ID
		replyTo string // expected EventError.ReplyTo
	}{
		{"non-JSON body", subj, nil, []byte("hello there"), protocol.CodeMalformedEvent, "not a JSON object", "", ""},
		{"JSON array", subj, ceJSON, []byte(`[1,2]`), protocol.CodeMalformedEvent, "not an object", "", ""},
		{"JSON null", subj, nil, []byte(`null`), protocol.CodeMalformedEvent, "not a JSON object", "", ""},
		{"empty body", subj, nil, nil, protocol.CodeMalformedEvent, "empty body", "", ""},
		{"missing id", subj, nil, structured(t, map[string]any{"id": nil}), protocol.CodeMissingAttribute, "id", "", ""},
		{"empty id", subj, nil, structured(t, map[string]any{"id": ""}), protocol.CodeMissingAttribute, "id", "", ""},
		{"missing source", subj, nil, structured(t, map[string]any{"source": nil}), protocol.CodeMissingAttribute, "source", "req-1", "lion.reply.req-1"},
		{"missing type", subj, nil, structured(t, map[string]any{"type": nil}), protocol.CodeMissingAttribute, "type", "req-1", "lion.reply.req-1"},
		{"missing specversion", subj, nil, structured(t, map[string]any{"specversion": nil}), protocol.CodeMissingAttribute, "specversion", "req-1", "lion.reply.req-1"},
		{"missing two", subj, nil, structured(t, map[string]any{"source": nil, "type": nil}), protocol.CodeMissingAttribute, "attributes: source, type", "req-1", "lion.reply.req-1"},
		{"binary missing id", subj, binary(nil, "ce-id"), []byte(`{}`), protocol.CodeMissingAttribute, "id", "", ""},
		{"binary missing source", subj, binary(nil, "ce-source"), []byte(`{}`), protocol.CodeMissingAttribute, "source", "bin-1", "lion.reply.bin-1"},
		{"wrong specversion", subj, nil, structured(t, map[string]any{"specversion": "0.3"}), protocol.CodeUnsupportedSpecVersion, `"0.3"`, "req-1", "lion.reply.req-1"},
		{"binary wrong specversion", subj, binary(map[string]string{"ce-specversion": "2.0"}), []byte(`{}`), protocol.CodeUnsupportedSpecVersion, `"2.0"`, "bin-1", "lion.reply.bin-1"},
		{"specversion not a string", subj, nil, structured(t, map[string]any{"specversion": 1}), protocol.CodeMalformedEvent, "specversion", "req-1", "lion.reply.req-1"},
		{"unknown verb", "lion.ops.nosuch", nil, structured(t, map[string]any{"type": "lionbus.nosuch.request"}), protocol.CodeUnknownType, "nosuch", "req-1", "lion.reply.req-1"},
		{"not a request type", subj, nil, structured(t, map[string]any{"type": "com.example.thing"}), protocol.CodeUnknownType, "com.example.thing", "req-1", "lion.reply.req-1"},
		{"bad op name", "lion.ops.op.a b", nil, structured(t, map[string]any{"type": "lionbus.op.a b.request"}), protocol.CodeUnknownType, "operation name", "req-1", "lion.reply.req-1"},
		{"type and subject differ", "lion.ops.op.other", nil, structured(t, nil), protocol.CodeUnknownType, "lion.ops.op.echo", "req-1", "lion.reply.req-1"},
		{"not a request subject", "elsewhere.op.echo", nil, structured(t, nil), protocol.CodeUnknownType, "not a request subject", "req-1", "lion.reply.req-1"},
		{"data not an object", subj, nil, structured(t, map[string]any{"data": "text"}), protocol.CodeInvalidData, "data at /:", "req-1", "lion.reply.req-1"},
		{"data not JSON", subj, nil, structured(t, map[string]any{"data_base64": "bm90IGpzb24=", "data": nil}), protocol.CodeInvalidData, "not valid JSON", "req-1", "lion.reply.req-1"},
		{"non-JSON content type", subj, nil, structured(t, map[string]any{"datacontenttype": "text/plain"}), protocol.CodeInvalidData, "text/plain", "req-1", "lion.reply.req-1"},
		{"binary data not JSON", subj, binary(nil), []byte(`{"a":`), protocol.CodeInvalidData, "not valid JSON", "bin-1", "lion.reply.bin-1"},
		{"invalid branch id", subj, nil, structured(t, map[string]any{"branchid": "a.b"}), protocol.CodeInvalidBranchID, "a.b", "req-1", "lion.reply.req-1"},
		{"branch id too long", subj, nil, structured(t, map[string]any{"branchid": strings.Repeat("b", 129)}), protocol.CodeInvalidBranchID, "128", "req-1", "lion.reply.req-1"},
		{"branch id a number", subj, nil, structured(t, map[string]any{"branchid": 7}), protocol.CodeInvalidBranchID, "branchid", "req-1", "lion.reply.req-1"},
		{"binary invalid branch id", subj, binary(map[string]string{"ce-branchid": "x%20y"}), []byte(`{}`), protocol.CodeInvalidBranchID, "x y", "bin-1", "lion.reply.bin-1"},
		{"oversize", subj, nil, structured(t, map[string]any{"data": map[string]string{"t": strings.Repeat("x", 2000)}}), protocol.CodePayloadTooLarge, "limit of 1024 bytes", "", ""},
		{"oversize headers", subj, binary(map[string]string{"ce-big": strings.Repeat("x", 1100)}), []byte(`{}`), protocol.CodePayloadTooLarge, "1024", "", ""},
		{"id not a token", subj, nil, structured(t, map[string]any{"id": "a b"}), protocol.CodeInvalidAttribute, "id", "", ""},
		{"id not a token with replyto", subj, nil, structured(t, map[string]any{"id": "a.b", "replyto": "inbox.x"}), protocol.CodeInvalidAttribute, "id", "", "inbox.x"},
		{"replyto into history", subj, nil, structured(t, map[string]any{"replyto": "lion.history.b1"}), protocol.CodeInvalidAttribute, "own lion.reply.req-1", "req-1", "lion.reply.req-1"},
		{"replyto another request's reply", subj, nil, structured(t, map[string]any{"replyto": "lion.reply.req-2"}), protocol.CodeInvalidAttribute, "reply subject of another request", "req-1", "lion.reply.req-1"},
		{"replyto under the reply prefix", subj, nil, structured(t, map[string]any{"replyto": "lion.reply.req-1.x"}), protocol.CodeInvalidAttribute, "only the request's own lion.reply.req-1", "req-1", "lion.reply.req-1"},
		{"replyto another's reply, bad id", subj, nil, structured(t, map[string]any{"id": "a b", "replyto": "lion.reply.req-2"}), protocol.CodeInvalidAttribute, "id", "", ""},
		{"replyto wildcard", subj, nil, structured(t, map[string]any{"replyto": "inbox.>"}), protocol.CodeInvalidAttribute, "literal", "req-1", "lion.reply.req-1"},
		{"replyto not a string", subj, nil, structured(t, map[string]any{"replyto": 12}), protocol.CodeInvalidAttribute, "replyto", "req-1", "lion.reply.req-1"},
		{"replyto system", subj, nil, structured(t, map[string]any{"replyto": "$JS.API.STREAM.DELETE.LION_OPS"}), protocol.CodeInvalidAttribute, "system", "req-1", "lion.reply.req-1"},
		{"bad time", subj, nil, structured(t, map[string]any{"time": "yesterday"}), protocol.CodeMalformedEvent, "RFC 3339", "req-1", "lion.reply.req-1"},
		{"bad source", subj, nil, structured(t, map[string]any{"source": "%zz"}), protocol.CodeMalformedEvent, "source", "req-1", "lion.reply.req-1"},
		{"data and data_base64", subj, nil, structured(t, map[string]any{"data_base64": "e30="}), protocol.CodeMalformedEvent, "data_base64", "req-1", "lion.reply.req-1"},
		{"bad base64", subj, nil, structured(t, map[string]any{"data_base64": "!!", "data": nil}), protocol.CodeMalformedEvent, "base64", "req-1", "lion.reply.req-1"},
		{"object extension", subj, nil, structured(t, map[string]any{"extra": map[string]int{"a": 1}}), protocol.CodeMalformedEvent, "extra", "req-1", "lion.reply.req-1"},
		{"upper-case extension", subj, nil, structured(t, map[string]any{"Extra": "x"}), protocol.CodeMalformedEvent, "Extra", "req-1", "lion.reply.req-1"},
		{"batch mode", subj, nats.Header{"Content-Type": {"application/cloudevents-batch+json"}}, []byte(`[]`), protocol.CodeMalformedEvent, "batch", "", ""},
		{"other content type is binary", subj, nats.Header{"Content-Type": {"text/plain"}}, structured(t, nil), protocol.CodeMissingAttribute, "id, source, specversion, type", "", ""},
		{"header not UTF-8", subj, binary(map[string]string{"ce-note": "%C0%A0"}), []byte(`{}`), protocol.CodeMalformedEvent, "UTF-8", "bin-1", "lion.reply.bin-1"},
		{"attribute twice", subj, binary(map[string]string{"CE-ID": "other"}), []byte(`{}`), protocol.CodeMalformedEvent, "two headers", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := &nats.Msg{Subject: tt.subject, Header: tt.header, Data: tt.body}
			req, err := codec.DecodeRequest(msg)
			if err == nil {
				t.Fatalf("DecodeRequest accepted it: %+v", req)
			}
			if !errors.Is(err, protocol.ErrBadEvent) {
				t.Errorf("error %v does not match ErrBadEvent", err)
			}
			var ee *protocol.EventError
			if !errors.As(err, &ee) {
				t.Fatalf("error %T %v is not an *EventError", err, err)
			}
			if ee.Code != tt.code {
				t.Errorf("code = %s (%s), want %s", ee.Code, ee.Message, tt.code)
			}
			if !strings.Contains(ee.Message, tt.inMsg) {
				t.Errorf("message %q does not contain %q", ee.Message, tt.inMsg)
			}
			if ee.ID != tt.id || ee.ReplyTo != tt.replyTo {
				t.Errorf("ID, ReplyTo = %q, %q; want %q, %q", ee.ID, ee.ReplyTo, tt.id, tt.replyTo)
			}
		})
	}
}

// TestCodec_branch_scoped_verbs needs the verb request schemas.
// TestCodec_accepted_replyto: a reply subject outside the prefix, or the
// request's own default one, is accepted as given.
func TestCodec_accepted_replyto(t *testing.T) {
	t.Parallel()
	codec := newCodec(t, provision.Config{})
	subj := codec.Subjects().Op("op.echo")
	for _, replyTo := range []string{"lion.reply.req-1", "_INBOX.x", "app.answers", "lionx.reply.req-2", "inbox.client-7.lion.reply.req-2"} {
		t.Run(replyTo, func(t *testing.T) {
			t.Parallel()
			req, err := codec.DecodeRequest(&nats.Msg{Subject: subj, Data: structured(t, map[string]any{"replyto": replyTo})})
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if req.ReplyTo != replyTo {
				t.Errorf("ReplyTo = %q, want %q", req.ReplyTo, replyTo)
			}
		})
	}
}

func TestCodec_branch_scoped_verbs(t *testing.T) {
	t.Parallel()
	if !schemas.Has("lionbus.branch.get.request") {
		t.Skip("no lionbus.branch.get.request schema yet")
	}
	codec := newCodec(t, provision.Config{})
	body := structured(t, map[string]any{"type": "lionbus.branch.get.request", "data": map[string]any{}})
	_, err := codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.branch.get", Data: body})
	var ee *protocol.EventError
	if !errors.As(err, &ee) || ee.Code != protocol.CodeMissingBranchID {
		t.Fatalf("DecodeRequest = %v, want missing_branch_id", err)
	}
	body = structured(t, map[string]any{"type": "lionbus.branch.get.request", "data": map[string]any{}, "branchid": "b-1"})
	req, err := codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.branch.get", Data: body})
	if err != nil {
		t.Fatalf("DecodeRequest with branchid: %v", err)
	}
	if req.BranchID != "b-1" || req.Verb != "branch.get" {
		t.Errorf("request = %+v", req)
	}
	// A chat may come without a branch (it then runs on none); a
	// chat_and_record may not.
	body = structured(t, map[string]any{"type": "lionbus.chat.request", "data": map[string]any{"instruction": "q", "chat_model": "scripted:echo"}})
	if req, err := codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.chat", Data: body}); err != nil || req.BranchID != "" {
		t.Fatalf("chat without branchid: %+v, %v", req, err)
	}
	body = structured(t, map[string]any{"type": "lionbus.chat_and_record.request", "data": map[string]any{"instruction": "q"}})
	if _, err := codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.chat_and_record", Data: body}); !errors.As(err, &ee) || ee.Code != protocol.CodeMissingBranchID {
		t.Fatalf("chat_and_record without branchid: %v, want missing_branch_id", err)
	}
}

func TestCodec_invalid_data_names_pointer(t *testing.T) {
	t.Parallel()
	if !schemas.Has("lionbus.communicate.request") {
		t.Skip("no lionbus.communicate.request schema yet")
	}
	codec := newCodec(t, provision.Config{})
	body := structured(t, map[string]any{"type": "lionbus.communicate.request", "branchid": "b1",
		"data": map[string]any{"instruction": 5}})
	_, err := codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.communicate", Data: body})
	var ee *protocol.EventError
	if !errors.As(err, &ee) || ee.Code != protocol.CodeInvalidData || !strings.HasPrefix(ee.Message, "data at /instruction: ") {
		t.Fatalf("DecodeRequest = %v, want invalid_data at /instruction", err)
	}
}

func TestCodec_error_carries_branch_and_trace(t *testing.T) {
	t.Parallel()
	codec := newCodec(t, provision.Config{})
	body := structured(t, map[string]any{"data": 5, "branchid": "b9", "traceparent": testTrace, "replyto": "_INBOX.abc"})
	_, err := codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.op.echo", Data: body})
	var ee *protocol.EventError
	if !errors.As(err, &ee) {
		t.Fatalf("DecodeRequest = %v", err)
	}
	if ee.BranchID != "b9" || ee.TraceParent != testTrace || ee.ReplyTo != "_INBOX.abc" || ee.ID != "req-1" {
		t.Errorf("EventError = %+v", ee)
	}
}

func TestCodec_Decode_any_event(t *testing.T) {
	t.Parallel()
	codec := newCodec(t, provision.Config{})
	// Decode reads answers too: any type, no subject rules.
	ev, err := codec.Decode(&nats.Msg{Subject: "lion.reply.x", Data: structured(t, map[string]any{"type": "lionbus.error"})})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type() != "lionbus.error" {
		t.Errorf("type = %q", ev.Type())
	}
	if _, err := codec.Decode(&nats.Msg{Data: []byte("x")}); !errors.Is(err, protocol.ErrBadEvent) {
		t.Errorf("Decode(garbage) = %v", err)
	}
}

func TestHeaderValue_percent_encoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		plain, encoded string
	}{
		{"Euro € 😀", "Euro%20%E2%82%AC%20%F0%9F%98%80"},
		{"plain-ascii_1.0/x", "plain-ascii_1.0/x"},
		{`say "hi" 100%`, "say%20%22hi%22%20100%25"},
		{"tab\there\x7f", "tab%09here%7F"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := protocol.EncodeHeaderValue(tt.plain); got != tt.encoded {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tt.plain, got, tt.encoded)
		}
		got, err := protocol.DecodeHeaderValue(tt.encoded)
		if err != nil || got != tt.plain {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q", tt.encoded, got, err, tt.plain)
		}
	}
	decodes := []struct {
		in, want string
		ok       bool
	}{
		{"Euro%20%e2%82%ac", "Euro €", true},       // lower-case hex
		{`"quoted%20value"`, "quoted value", true}, // older senders quote
		{`"a\"b"`, `a"b`, true},                    // backslash escapes in quotes
		{`"a\\b"`, `a\b`, true},                    // escaped backslash in quotes
		{`a\"b`, `a\"b`, true},                     // not quoted: backslash is data
		{`"unterminated`, `"unterminated`, true},   // a lone quote is data
		{"%22quoted%22", `"quoted"`, true},         // encoded quotes are data
		{"%25C0%25A0", "%C0%A0", true},             // decoded once only
		{"50%", "50%", true},                       // bare '%' from a sender that does not encode
		{"%zz", "%zz", true},                       // not hex: kept
		{"ok%2", "ok%2", true},                     // short escape at the end
		{"%%41", "%A", true},                       // '%' then an escape
		{"Euro € raw", "Euro € raw", true},         // unencoded UTF-8 from sdk-go senders
		{"line%0Abreak", "line\nbreak", true},      // control characters
		{"%F0%9F%98%80", "😀", true},                // four bytes
		{"%C0%A0", "", false},                      // overlong encoding: invalid UTF-8
		{"%C0%80", "", false},                      // overlong NUL
		{"%FF", "", false},                         // invalid byte
		{"%80", "", false},                         // lone continuation byte
		{"%F0%9F%98", "", false},                   // truncated sequence
		{"%ED%A0%80", "", false},                   // surrogate half
		{"%F4%90%80%80", "", false},                // beyond U+10FFFF
	}
	for _, tt := range decodes {
		got, err := protocol.DecodeHeaderValue(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestCodec_without_validator_decodes_events_not_requests: a codec made
// without a Validator (a client's, a tool service's) decodes events, and
// refuses every request with an internal error naming the missing
// validator, instead of passing unchecked data on.
func TestCodec_without_validator_decodes_events_not_requests(t *testing.T) {
	t.Parallel()
	codec, err := protocol.NewCodec(protocol.CodecConfig{})
	if err != nil {
		t.Fatal(err)
	}
	body := structured(t, nil)
	if _, err := codec.DecodeEvent(nil, body); err != nil {
		t.Fatalf("DecodeEvent: %v", err)
	}
	_, err = codec.DecodeRequest(&nats.Msg{Subject: "lion.ops.op.echo", Data: body})
	var ee *protocol.EventError
	if !errors.As(err, &ee) || ee.Code != ops.CodeInternal || !strings.Contains(ee.Message, "no Validator") {
		t.Fatalf("DecodeRequest = %v, want an internal EventError about the missing Validator", err)
	}
	if ee.ID != "req-1" {
		t.Errorf("the refusal is not answerable: ID %q", ee.ID)
	}
}
