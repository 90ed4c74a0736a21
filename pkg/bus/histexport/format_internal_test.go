package histexport

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"
)

// file returns a file of the given lines, each a CloudEvent without its
// hash, hashed and chained as a Writer does.
func file(t *testing.T, events ...cloudEvent) []byte {
	t.Helper()
	var out bytes.Buffer
	var prev [sha256.Size]byte
	for _, ce := range events {
		canon, err := json.Marshal(ce)
		if err != nil {
			t.Fatal(err)
		}
		prev = chain(prev, canon)
		out.Write(line(prev, canon))
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func ce(typ, subject string, data string) cloudEvent {
	return cloudEvent{SpecVersion: "1.0", ID: "x", Source: source(subject), Type: typ, Subject: subject, DataContentType: "application/json", Data: json.RawMessage(data)}
}

// TestReader_refuses_well_chained_files_that_break_the_format: a file
// whose every hash chains, but whose content is not this format: another
// version, a version 1 file starting at a compaction point, no header, an event of another branch, an end line that
// miscounts, an unknown field.
func TestReader_refuses_well_chained_files_that_break_the_format(t *testing.T) {
	header := ce(TypeHeader, "b1", `{"format":"lionbus.history/1","branch_id":"b1","exported_at":"2026-01-01T00:00:00Z"}`)
	created := ce("lionbus.branch.created", "b1", `{"seq":2,"type":"branch.created","request_id":"r","time":"2026-01-01T00:00:00Z"}`)
	created.LionSeq = 2
	cleared := ce("lionbus.branch.cleared", "b1", `{"seq":4,"type":"branch.cleared","request_id":"c","time":"2026-01-01T00:00:00Z"}`)
	cleared.LionSeq = 4
	end := ce(TypeEnd, "b1", `{"events":2,"last_seq":4}`)
	headerV2 := ce(TypeHeader, "b1", `{"format":"lionbus.history/2","branch_id":"b1","exported_at":"2026-01-01T00:00:00Z"}`)
	compacted := ce("lionbus.branch.compacted", "b1", `{"seq":2,"type":"branch.compacted","request_id":"k","time":"2026-01-01T00:00:00Z","compaction":{"head":1,"settings":{},"messages":[],"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","dropped_before":1,"dropped_events":1}}`)
	compacted.LionSeq = 2
	tests := []struct {
		name  string
		lines []cloudEvent
		line  int
		want  error
	}{
		{"good", []cloudEvent{header, created, cleared, end}, 0, nil},
		{"another version", []cloudEvent{ce(TypeHeader, "b1", `{"format":"lionbus.history/3","branch_id":"b1","exported_at":"2026-01-01T00:00:00Z"}`), created, end}, 1, ErrUnsupportedFormat},
		{"version 2", []cloudEvent{headerV2, created, cleared, end}, 0, nil},
		{"version 2 from a compaction point", []cloudEvent{headerV2, compacted, cleared, end}, 0, nil},
		{"version 1 from a compaction point", []cloudEvent{header, compacted, cleared, end}, 2, ErrOrder},
		{"a compaction point without its state", []cloudEvent{headerV2, func() cloudEvent {
			c := ce("lionbus.branch.compacted", "b1", `{"seq":2,"type":"branch.compacted","request_id":"k","time":"2026-01-01T00:00:00Z"}`)
			c.LionSeq = 2
			return c
		}(), cleared, end}, 2, ErrMalformed},
		{"a branch.created after a compaction point", []cloudEvent{headerV2, compacted, func() cloudEvent {
			c := created
			c.LionSeq = 4
			c.Data = json.RawMessage(`{"seq":4,"type":"branch.created","request_id":"r","time":"2026-01-01T00:00:00Z"}`)
			return c
		}(), end}, 3, ErrOrder},
		{"no header", []cloudEvent{created, cleared, end}, 1, ErrNotHeader},
		{"an event of another branch", []cloudEvent{header, created, ce("lionbus.branch.cleared", "b2", `{}`), end}, 3, ErrOrder},
		{"the end miscounts", []cloudEvent{header, created, ce(TypeEnd, "b1", `{"events":3,"last_seq":4}`)}, 3, ErrEndMismatch},
		{"events out of order", []cloudEvent{header, cleared, created, end}, 2, ErrOrder},
		{"lionseq disagrees with the event", []cloudEvent{header, func() cloudEvent { c := created; c.LionSeq = 3; return c }(), end}, 2, ErrMalformed},
		{"an unknown field in an event", []cloudEvent{header, ce("lionbus.branch.created", "b1", `{"seq":2,"type":"branch.created","request_id":"r","time":"2026-01-01T00:00:00Z","extra":1}`), end}, 2, ErrMalformed},
		{"a type that is no event's", []cloudEvent{header, ce("other.thing", "b1", `{}`), end}, 2, ErrMalformed},
		{"a wrong source", []cloudEvent{header, func() cloudEvent { c := created; c.Source = "/elsewhere"; return c }(), end}, 2, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(file(t, tt.lines...)))
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var le *LineError
			if !errors.Is(err, tt.want) || !errors.As(err, &le) || le.Line != tt.line {
				t.Fatalf("Verify = %v, want %v at line %d", err, tt.want, tt.line)
			}
		})
	}
}
