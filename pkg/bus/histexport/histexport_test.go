package histexport_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/wire"
)

// sampleEvents is a history of every event type, with a clear in an
// exchange, a number no float64 holds exactly and text that JSON escapes.
func sampleEvents() []wire.Event {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	msg := func(id, text string) wire.Message {
		return wire.Message{ID: id, Kind: wire.KindInstruction, Role: wire.RoleUser, CreatedAt: at, Content: map[string]any{"instruction": text}}
	}
	return []wire.Event{
		{Seq: 3, Type: wire.EventCreated, RequestID: "r1", Time: at, BranchID: "b1", Settings: &wire.Settings{System: "be brief"},
			Messages: []wire.Message{{ID: "s", Kind: wire.KindSystem, Role: wire.RoleSystem, CreatedAt: at, Content: map[string]any{"system_message": "be brief"}}}},
		{Seq: 5, Type: wire.EventMessages, RequestID: "r2", Time: at.Add(time.Second), BranchID: "b1", Messages: []wire.Message{msg("m1", "<hello> & \"bye\"\n")},
			Result: json.RawMessage(`{"value":"x","n":12345678901234567890}`), ModelCalls: 1},
		{Seq: 9, Type: wire.EventCleared, RequestID: "r3", Time: at.Add(2 * time.Second), BranchID: "b1"},
		{Seq: 10, Type: wire.EventUpdated, RequestID: "r4", Time: at.Add(3 * time.Second), BranchID: "b1", Settings: &wire.Settings{Notes: map[string]any{"k": json.Number("12345678901234567890")}}},
		{Seq: 14, Type: wire.EventMessages, RequestID: "r5", Time: at.Add(4 * time.Second), BranchID: "b1", Clear: true, Messages: []wire.Message{msg("m2", "again ☃")}, ModelCalls: 2},
	}
}

// export writes evs as the export of branch b1.
func export(t testing.TB, evs []wire.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := histexport.NewWriter(&buf, histexport.Header{BranchID: "b1", ExportedAt: time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), Exporter: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads every event of file.
func readAll(file []byte) ([]wire.Event, error) {
	r, err := histexport.NewReader(bytes.NewReader(file))
	if err != nil {
		return nil, err
	}
	var evs []wire.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExport_round_trip_keeps_every_event_exactly(t *testing.T) {
	evs := sampleEvents()
	file := export(t, evs)
	got, err := readAll(file)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := jsonOf(t, got), jsonOf(t, evs); a != b {
		t.Fatalf("events read back differ:\n got %s\nwant %s", a, b)
	}
	s, err := histexport.Verify(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := histexport.Summary{Header: s.Header, Events: len(evs), FirstSeq: 3, LastSeq: 14, Lines: len(evs) + 2, Head: s.Head}
	if !reflect.DeepEqual(*s, want) || len(s.Head) != 64 || s.Header.Format != histexport.Format || s.Header.BranchID != "b1" {
		t.Fatalf("summary %+v, want %+v", *s, want)
	}
	if again := export(t, got); !bytes.Equal(again, file) {
		t.Fatalf("exporting the events read back gives other bytes:\n%s\n%s", again, file)
	}
}

// Every line is a CloudEvent whose canonical bytes (the line without its
// hash member) hash, chained, to the line's hash — computed here from
// the rule in docs/history.md, not with the package's code.
func TestExport_lines_follow_the_documented_rule(t *testing.T) {
	file := export(t, sampleEvents())
	lines := strings.SplitAfter(string(file), "\n")
	lines = lines[:len(lines)-1]
	prev := make([]byte, 32)
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\n")
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		hash, _ := m["lionhash"].(string)
		prefix := `{"lionhash":"` + hash + `",`
		if !strings.HasPrefix(l, prefix) {
			t.Fatalf("line %d does not start with its hash member", i+1)
		}
		canon := "{" + strings.TrimPrefix(l, prefix)
		if got := sha256Hex(append(append([]byte{}, prev...), canon...)); got != hash {
			t.Fatalf("line %d: hash %s, the rule gives %s", i+1, hash, got)
		}
		prev = unhex(t, hash)
		for _, attr := range []string{"specversion", "id", "source", "type", "subject", "datacontenttype", "data"} {
			if _, ok := m[attr]; !ok {
				t.Fatalf("line %d has no %s", i+1, attr)
			}
		}
		switch {
		case i == 0 && m["type"] != histexport.TypeHeader:
			t.Fatalf("line 1 type %v", m["type"])
		case i == len(lines)-1 && m["type"] != histexport.TypeEnd:
			t.Fatalf("last line type %v", m["type"])
		}
	}
}

// TestVerify_detects_edits_drops_and_reorders: one flipped bit anywhere
// in the file, a dropped line, a swapped pair, a repeated line, anything
// after the end line, a lost final newline: each fails, at the line it
// happened, with the sentinel error that says what.
func TestVerify_detects_edits_drops_and_reorders(t *testing.T) {
	file := export(t, sampleEvents())
	lines := strings.SplitAfter(string(file), "\n")
	lines = lines[:len(lines)-1]
	n := len(lines)
	join := func(ls []string) []byte { return []byte(strings.Join(ls, "")) }
	type tamper struct {
		name     string
		file     []byte
		wantLine int
		want     []error // any of them
	}
	var tests []tamper
	// Flip a bit of every byte; the line is the one holding the byte.
	lineOf := make([]int, len(file))
	for i, l := 0, 1; i < len(file); i++ {
		lineOf[i] = l
		if file[i] == '\n' {
			l++
		}
	}
	for i := range file {
		f := bytes.Clone(file)
		f[i] ^= 0x01
		tests = append(tests, tamper{fmt.Sprintf("byte %d edited", i), f, lineOf[i], []error{histexport.ErrHashMismatch, histexport.ErrMalformed, histexport.ErrTruncated}})
	}
	for i := range n {
		dropped := append(append([]string{}, lines[:i]...), lines[i+1:]...)
		want := []error{histexport.ErrHashMismatch}
		if i == n-1 {
			want = []error{histexport.ErrTruncated}
		}
		tests = append(tests, tamper{fmt.Sprintf("line %d dropped", i+1), join(dropped), i + 1, want})
		if i+1 < n {
			swapped := append([]string{}, lines...)
			swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
			tests = append(tests, tamper{fmt.Sprintf("lines %d and %d swapped", i+1, i+2), join(swapped), i + 1, []error{histexport.ErrHashMismatch}})
		}
		repeated := append(append(append([]string{}, lines[:i+1]...), lines[i]), lines[i+1:]...)
		tests = append(tests, tamper{fmt.Sprintf("line %d repeated", i+1), join(repeated), i + 2, []error{histexport.ErrHashMismatch, histexport.ErrTrailing}})
	}
	tests = append(tests,
		tamper{"a line after the end", append(bytes.Clone(file), lines[1]...), n + 1, []error{histexport.ErrTrailing}},
		tamper{"no final newline", file[:len(file)-1], n, []error{histexport.ErrTruncated}},
		tamper{"empty", nil, 1, []error{histexport.ErrTruncated}},
		tamper{"only the header", []byte(lines[0]), 2, []error{histexport.ErrTruncated}},
		tamper{"an empty line inserted", join(append(append(append([]string{}, lines[:2]...), "\n"), lines[2:]...)), 3, []error{histexport.ErrMalformed}},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := histexport.Verify(bytes.NewReader(tt.file))
			var le *histexport.LineError
			if !errors.As(err, &le) {
				t.Fatalf("Verify = %v, want a *LineError", err)
			}
			if le.Line != tt.wantLine {
				t.Errorf("error at line %d, want line %d: %v", le.Line, tt.wantLine, err)
			}
			matched := false
			for _, w := range tt.want {
				matched = matched || errors.Is(err, w)
			}
			if !matched {
				t.Errorf("error %v, want one of %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", le.Line)) {
				t.Errorf("message %q does not start with its line", err)
			}
		})
	}
}

// TestWriter_refuses_events_out_of_order: what a Reader would refuse, the
// Writer refuses to write.
func TestWriter_refuses_events_out_of_order(t *testing.T) {
	evs := sampleEvents()
	tests := []struct {
		name string
		evs  []wire.Event
	}{
		{"not starting with branch.created", evs[1:]},
		{"a second branch.created", []wire.Event{evs[0], {Seq: 20, Type: wire.EventCreated, Time: evs[0].Time}}},
		{"a sequence not above the last", []wire.Event{evs[0], evs[2], evs[1]}},
		{"another branch's event", []wire.Event{evs[0], {Seq: 20, Type: wire.EventCleared, BranchID: "b2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := histexport.NewWriter(io.Discard, histexport.Header{BranchID: "b1"})
			if err != nil {
				t.Fatal(err)
			}
			var last error
			for _, ev := range tt.evs {
				if last = w.Write(ev); last != nil {
					break
				}
			}
			if !errors.Is(last, histexport.ErrOrder) {
				t.Fatalf("Write = %v, want ErrOrder", last)
			}
		})
	}
}
