package wire_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
)

// TestResult_extra_sits_beside_the_shared_fields encodes results with and
// without a verb's own part and decodes them back: the extra keys are
// top-level keys of the data, in the typed result of the verb too.
func TestResult_extra_sits_beside_the_shared_fields(t *testing.T) {
	loc := &wire.RunLogLocation{Dir: "audit", Snapshot: "p.runlog.audit.r1.snapshot"}
	tests := []struct {
		name  string
		extra any
		want  string
	}{
		{"none", nil, `{"value":"hi","branch_id":"b1","duration_ms":7}`},
		{"an empty extra", wire.OperateExtra{}, `{"value":"hi","branch_id":"b1","duration_ms":7}`},
		{"operate", wire.OperateExtra{LNDLRounds: []wire.LNDLRound{{Round: 1, Budget: 3, BudgetLeft: 2, Outcome: "success", Actions: []wire.LNDLAction{}}}, RunLog: loc},
			`{"value":"hi","branch_id":"b1","duration_ms":7,"lndl_rounds":[{"round":1,"budget":3,"budget_left":2,"outcome":"success","actions":[],"notes":0}],"run_log":{"dir":"audit","snapshot":"p.runlog.audit.r1.snapshot"}}`},
		{"react", wire.ReactExtra{Analyses: []json.RawMessage{json.RawMessage(`{"a":1}`)}},
			`{"value":"hi","branch_id":"b1","duration_ms":7,"analyses":[{"a":1}]}`},
		{"run", wire.RunExtra{RunLog: loc}, `{"value":"hi","branch_id":"b1","duration_ms":7,"run_log":{"dir":"audit","snapshot":"p.runlog.audit.r1.snapshot"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &wire.Result{Value: json.RawMessage(`"hi"`), BranchID: "b1", DurationMS: 7}
			if tt.extra != nil {
				if err := res.SetExtra(tt.extra); err != nil {
					t.Fatal(err)
				}
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("encoded\n %s\nwant\n %s", b, tt.want)
			}
			var back wire.Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, again, b) {
				t.Fatalf("decoded and encoded again:\n %s\nwant\n %s", again, b)
			}
			// The verb's typed result reads the same data.
			var op wire.OperateResult
			if err := json.Unmarshal(b, &op); err != nil {
				t.Fatal(err)
			}
			var x wire.OperateExtra
			if err := back.DecodeExtra(&x); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(x, op.OperateExtra) {
				t.Fatalf("DecodeExtra %+v, the typed result %+v", x, op.OperateExtra)
			}
		})
	}
}

// TestResult_extra_refused names what SetExtra and encoding refuse: an
// extra that is not an object, or that names a shared field (which would
// put the key twice in the data).
func TestResult_extra_refused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra any
	}{
		{"an array", []int{1}},
		{"a string", "x"},
		{"a shared key", map[string]any{"value": 1}},
		{"another shared key", map[string]any{"duration_ms": 1, "x": 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var res wire.Result
			if err := res.SetExtra(tt.extra); !errors.Is(err, wire.ErrExtraNotObject) {
				t.Fatalf("SetExtra: %v, want ErrExtraNotObject", err)
			}
			raw, _ := json.Marshal(tt.extra)
			res = wire.Result{Value: json.RawMessage(`1`), Extra: raw}
			if _, err := json.Marshal(res); !errors.Is(err, wire.ErrExtraNotObject) {
				t.Fatalf("Marshal: %v, want ErrExtraNotObject", err)
			}
		})
	}
}

// TestResult_decode_errors: a shared field of the wrong type is an error
// naming it, as with the plain struct; null leaves the result as it is.
func TestResult_decode_errors(t *testing.T) {
	var res wire.Result
	if err := json.Unmarshal([]byte(`{"value":1,"duration_ms":"soon"}`), &res); err == nil || !strings.Contains(err.Error(), "duration_ms") {
		t.Fatalf("err %v, want one naming duration_ms", err)
	}
	res = wire.Result{BranchID: "kept"}
	if err := json.Unmarshal([]byte(`null`), &res); err != nil || res.BranchID != "kept" {
		t.Fatalf("null: %v, %+v", err, res)
	}
	if err := json.Unmarshal([]byte(`[1]`), &res); err == nil {
		t.Fatal("an array decoded as a result")
	}
}

// plainResult is Result's shared fields decoded by encoding/json itself,
// the reference for the one-pass decoder.
type plainResult struct {
	Value      json.RawMessage `json:"value"`
	BranchID   string          `json:"branch_id,omitempty"`
	Usage      *wire.Usage     `json:"usage,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	Replayed   bool            `json:"replayed,omitempty"`
}

// FuzzResultJSON checks Result's decoder against encoding/json's own on
// the shared fields, and that decoding what it encodes gives it back.
func FuzzResultJSON(f *testing.F) {
	for _, s := range []string{
		`{"value":"hi","branch_id":"b1","duration_ms":7}`,
		`{"value":{"a":[1,2]},"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7,"cost_usd":0.5},"duration_ms":1,"replayed":true}`,
		`{"value":null,"lndl_rounds":[{"round":1}],"run_log":{"dir":"d"}}`,
		`{"value":1,"analyses":[1,{"x":2}],"zzz":null}`,
		`{"value":1,"value":2}`,
		`{"duration_ms":"x"}`,
		`null`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res wire.Result
		err := json.Unmarshal(data, &res)
		var plain plainResult
		perr := json.Unmarshal(data, &plain)
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) == nil {
			for k := range keys {
				if !isSharedKey(k) && isSharedKey(strings.ToLower(k)) {
					// encoding/json folds case; Result matches keys
					// exactly, as the schemas do.
					return
				}
			}
		}
		if (err == nil) != (perr == nil) {
			t.Fatalf("Result: %v, encoding/json: %v", err, perr)
		}
		if err != nil {
			return
		}
		if string(res.Value) != string(plain.Value) || res.BranchID != plain.BranchID || res.DurationMS != plain.DurationMS ||
			res.Replayed != plain.Replayed || !reflect.DeepEqual(res.Usage, plain.Usage) {
			t.Fatalf("Result %+v, encoding/json %+v", res, plain)
		}
		b, err := json.Marshal(res)
		if err != nil {
			if len(res.Value) == 0 {
				return // no value: nothing encodes
			}
			t.Fatalf("Marshal of a decoded result: %v", err)
		}
		var back wire.Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("decode of %s: %v", b, err)
		}
		b2, err := json.Marshal(back)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("encoded again %s (%v), want %s", b2, err, b)
		}
	})
}

func isSharedKey(k string) bool {
	switch k {
	case "value", "branch_id", "usage", "duration_ms", "replayed":
		return true
	}
	return false
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// BenchmarkResultJSON encodes and decodes a communicate's result (no
// extra) and an operate's with two LNDL rounds, through Result and, for
// comparison, through a plain struct of the same fields that encoding/json
// handles by itself.
func BenchmarkResultJSON(b *testing.B) {
	value := json.RawMessage(`{"city":"Lyon","country":"France","population":522250,"notes":"a reply of a few dozen bytes"}`)
	plain := plainResult{Value: value, BranchID: "bench-branch", Usage: &wire.Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}, DurationMS: 3}
	res := wire.Result{Value: value, BranchID: plain.BranchID, Usage: plain.Usage, DurationMS: 3}
	withRounds := res
	if err := withRounds.SetExtra(wire.OperateExtra{LNDLRounds: []wire.LNDLRound{
		{Round: 1, Budget: 3, BudgetLeft: 2, Outcome: "continue", Actions: []wire.LNDLAction{{Alias: "s", Function: "add"}}, Notes: 1},
		{Round: 2, Budget: 3, BudgetLeft: 1, Outcome: "success", Actions: []wire.LNDLAction{}, Notes: 1},
	}}); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, v any, into func() any) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := json.Marshal(v)
			if err != nil {
				b.Fatal(err)
			}
			if err := json.Unmarshal(data, into()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("plain struct", func(b *testing.B) { run(b, &plain, func() any { return new(plainResult) }) })
	b.Run("Result", func(b *testing.B) { run(b, &res, func() any { return new(wire.Result) }) })
	b.Run("Result with extra", func(b *testing.B) { run(b, &withRounds, func() any { return new(wire.Result) }) })
}
