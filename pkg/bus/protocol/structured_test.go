package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
)

// marshalStructuredMap is the plain form of marshalStructured: the event
// as a map of its members, written by json.Marshal. It writes the JSON event format. Data goes in "data" as
// JSON when the datacontenttype is JSON (application/json, text/json, any
// +json type, or none) and the data is valid JSON, as a string when it is
// other UTF-8 text, and base64-encoded in "data_base64" otherwise.
func marshalStructuredMap(e *event.Event) ([]byte, error) {
	m := map[string]any{
		"specversion": e.SpecVersion(),
		"id":          e.ID(),
		"source":      e.Source(),
		"type":        e.Type(),
	}
	if !e.Time().IsZero() {
		m["time"] = e.Time().UTC().Format(time.RFC3339Nano)
	}
	ct := e.DataContentType()
	opt := map[string]string{"datacontenttype": ct, "dataschema": e.DataSchema(), "subject": e.Subject()}
	for k, v := range opt {
		if v != "" {
			m[k] = v
		}
	}
	for name, v := range e.Extensions() {
		switch v.(type) {
		case string, bool, int32:
			m[name] = v
		default:
			s, err := formatExt(v)
			if err != nil {
				return nil, fmt.Errorf("extension %s: %w", name, err)
			}
			m[name] = s
		}
	}
	if data := e.Data(); data != nil {
		switch {
		case !e.DataBase64 && (ct == "" || isJSONContentType(ct)) && json.Valid(data):
			m["data"] = json.RawMessage(data)
		case !e.DataBase64 && ct != "" && !isJSONContentType(ct) && utf8.Valid(data):
			m["data"] = string(data)
		default:
			m["data_base64"] = base64.StdEncoding.EncodeToString(data)
		}
	}
	return json.Marshal(m)
}

// FuzzMarshalStructured checks that marshalStructured writes exactly what
// its plain form, json.Marshal of the event's members as a map, writes:
// for any attribute and extension strings, any data and content type.
func FuzzMarshalStructured(f *testing.F) {
	f.Add("id-1", "/lionbus/worker", "lionbus.communicate.result", "", "application/json", "b1", "r<1>&", int64(1700000000123456789), []byte(`{"a": [1, 2, "<x>"], "b":"\u2028"}`), false)
	f.Add("x", "/s", "t", "subj", "text/plain", "", "", int64(0), []byte("plain \xff text"), false)
	f.Add("x", "/s", "t", "", "", "\u2028\t\x01\"\\", "caf\xc3\xa9", int64(-1), []byte("not json {"), true)
	f.Fuzz(func(t *testing.T, id, source, typ, subject, ct, branch, request string, nanos int64, data []byte, b64 bool) {
		ev := event.New(event.CloudEventsVersionV1)
		ev.SetID(id)
		ev.SetSource(source)
		ev.SetType(typ)
		if subject != "" {
			ev.SetSubject(subject)
		}
		if nanos != 0 {
			ev.SetTime(time.Unix(0, nanos))
		}
		if ct != "" {
			ev.SetDataContentType(ct)
		}
		if branch != "" {
			ev.SetExtension(ExtBranchID, branch)
		}
		if request != "" {
			ev.SetExtension(ExtRequestID, request)
		}
		ev.SetExtension("flag", len(data)%2 == 0)
		ev.SetExtension("count", int32(len(data)))
		ev.DataEncoded = data
		ev.DataBase64 = b64
		want, werr := marshalStructuredMap(&ev)
		got, gerr := marshalStructured(&ev)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: plain %v, marshalStructured %v", werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("marshalStructured\n got %s\nwant %s", got, want)
		}
	})
}
