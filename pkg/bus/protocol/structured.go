package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/lionbus/lionbus/pkg/bus/internal/bufpool"
)

// marshalStructured writes the JSON event format. Data goes in "data" as
// JSON when the datacontenttype is JSON (application/json, text/json, any
// +json type, or none) and the data is valid JSON, as a string when it is
// other UTF-8 text, and base64-encoded in "data_base64" otherwise.
//
// The members are written in the order of their names, and strings and
// JSON data as encoding/json writes them (HTML-escaped, the data
// compacted): byte for byte what json.Marshal makes of the event as a
// map of its members (FuzzMarshalStructured checks it), without the map
// and the reflection.
func marshalStructured(e *event.Event) ([]byte, error) {
	members := make([]member, 0, 12)
	add := func(name, s string) { members = append(members, member{name: name, str: s}) }
	add("specversion", e.SpecVersion())
	add("id", e.ID())
	add("source", e.Source())
	add("type", e.Type())
	if !e.Time().IsZero() {
		add("time", e.Time().UTC().Format(time.RFC3339Nano))
	}
	ct := e.DataContentType()
	for _, o := range [...][2]string{{"datacontenttype", ct}, {"dataschema", e.DataSchema()}, {"subject", e.Subject()}} {
		if o[1] != "" {
			add(o[0], o[1])
		}
	}
	var exts map[string]any
	if ec, ok := e.Context.(*event.EventContextV1); ok {
		exts = ec.Extensions // read only: no copy
	} else {
		exts = e.Extensions()
	}
	for name, v := range exts {
		switch x := v.(type) {
		case string:
			add(name, x)
		case bool:
			members = append(members, member{name: name, lit: fmt.Sprint(x)})
		case int32:
			members = append(members, member{name: name, lit: fmt.Sprint(x)})
		default:
			s, err := formatExt(v)
			if err != nil {
				return nil, fmt.Errorf("extension %s: %w", name, err)
			}
			add(name, s)
		}
	}
	// The compacted data is copied into the event's bytes below, so its
	// buffer is reused.
	compact, release := bufpool.Get()
	defer release()
	if data := e.Data(); data != nil {
		switch {
		case !e.DataBase64 && (ct == "" || isJSONContentType(ct)) && json.Compact(compact, data) == nil:
			members = append(members, member{name: "data", raw: compact.Bytes(), isRaw: true})
		case !e.DataBase64 && ct != "" && !isJSONContentType(ct) && utf8.Valid(data):
			add("data", string(data))
		default:
			add("data_base64", base64.StdEncoding.EncodeToString(data))
		}
	}
	// Each name once, the last one set winning, as in a map.
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	kept := members[:0]
	for i, m := range members {
		if i+1 < len(members) && members[i+1].name == m.name {
			continue
		}
		kept = append(kept, m)
	}
	members = kept
	size := 2 + compact.Len()
	for _, m := range members {
		size += len(m.name) + len(m.str) + len(m.lit) + 8
	}
	out := bytes.NewBuffer(make([]byte, 0, size))
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		appendJSONString(out, m.name)
		out.WriteByte(':')
		switch {
		case m.isRaw:
			json.HTMLEscape(out, m.raw)
		case m.lit != "":
			out.WriteString(m.lit)
		default:
			appendJSONString(out, m.str)
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// member is one member of a structured event: a string, a literal (true,
// false, a number) or compacted JSON.
type member struct {
	name, str, lit string
	raw            []byte
	isRaw          bool
}

// hexDigits are the digits of a \u escape.
const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string the way encoding/json does
// with HTML escaping: <, > and & as \u003c, \u003e and \u0026, control
// characters escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b.WriteString(s[start:i])
			switch c {
			case '\\', '"':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[start:i])
			b.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b.WriteString(s[start:i])
			b.WriteString(`\u202`)
			b.WriteByte(hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
