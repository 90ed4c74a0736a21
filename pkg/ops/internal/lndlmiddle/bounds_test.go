package lndlmiddle

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The bounds of round_budget and the notes are as documented.
func TestLNDLMiddle_bounds(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want int
	}{{"1", 1}, {"10", 10}, {"3.0", 3}, {"0", 0}, {"11", 0}, {"-2", 0}, {`"3"`, 0}, {"1e400", 0}, {"null", 0}, {"", 0}} {
		n, err := ParseRoundBudget(json.RawMessage(tt.raw))
		if n != tt.want || (tt.want == 0) != (err != nil) {
			t.Errorf("ParseRoundBudget(%s) = %d, %v; want %d", tt.raw, n, err, tt.want)
		}
	}
	if n, err := RoundBudget(0); n != DefaultRoundBudget || err != nil {
		t.Errorf("RoundBudget(0) = %d, %v", n, err)
	}
	notes := map[string]any{}
	for i := range MaxNotes {
		notes[strings.Repeat("k", i+1)] = "v"
	}
	if err := CheckNotes(notes); err != nil {
		t.Errorf("%d notes: %v", MaxNotes, err)
	}
	notes["one more"] = "v"
	if err := CheckNotes(notes); !errors.Is(err, ErrNotes) {
		t.Errorf("%d notes: %v", MaxNotes+1, err)
	}
	if err := CheckNotes(map[string]any{"k": strings.Repeat("x", MaxNotesBytes)}); !errors.Is(err, ErrNotes) {
		t.Errorf("oversized note: %v", err)
	}
}
