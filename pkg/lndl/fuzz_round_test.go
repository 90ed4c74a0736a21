package lndl

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzRound checks that Round never panics and that its result is
// consistent for any response: the outcome matches Err and Assembled,
// pending aliases are unique, values marshal as JSON and Resolve works on
// every success. Seeds are the texts of the round vectors.
func FuzzRound(f *testing.F) {
	for _, v := range loadVectors(f, "round") {
		var in struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(v.Input, &in); err != nil {
			f.Fatal(err)
		}
		f.Add(in.Text, uint8(len(v.ID)))
	}
	targets := make([]*Target, 0, 3)
	for _, s := range []string{reportSchema, itemsSchema} {
		tg, err := ParseTarget([]byte(s))
		if err != nil {
			f.Fatal(err)
		}
		targets = append(targets, tg)
	}
	targets = append(targets, nil)
	known := map[string]any{"a": "x\ny", "r": []any{"p", "q"}, "o": map[string]any{"k": json.Number("1")}}
	notes := map[string]any{"n": "note"}

	f.Fuzz(func(t *testing.T, text string, pick uint8) {
		tg := targets[int(pick)%len(targets)]
		res := Round(RoundInput{Text: text, Target: tg, ActionResults: known, Notes: notes})
		if res.Notes == nil {
			t.Fatal("nil notes")
		}
		switch res.Outcome {
		case OutcomeRetry:
			if res.Err == nil || !errors.Is(res.Err, ErrLNDL) || res.Assembled != nil {
				t.Fatalf("retry with err %v, assembled %v", res.Err, res.Assembled)
			}
			return
		case OutcomeContinue:
			if res.Err != nil || res.Assembled != nil {
				t.Fatalf("continue with err %v, assembled %v", res.Err, res.Assembled)
			}
			return
		case OutcomeSuccess:
		default:
			t.Fatalf("outcome %d", res.Outcome)
		}
		if res.Err != nil {
			t.Fatalf("success with err %v", res.Err)
		}
		if _, ok := res.Assembled.(*Object); !ok {
			t.Fatalf("assembled is %T", res.Assembled)
		}
		if _, err := json.Marshal(res.Assembled); err != nil {
			t.Fatalf("marshal assembled: %v", err)
		}
		if full := collectPending(res.Assembled, 0); !reflect.DeepEqual(full, res.Pending) {
			t.Fatalf("pending %v, a walk of the whole value gives %v", res.Pending, full)
		}
		executed := map[string]any{}
		seen := map[string]bool{}
		for _, a := range res.Pending {
			if seen[a.Name] {
				t.Fatalf("alias %q pending twice", a.Name)
			}
			seen[a.Name] = true
			executed[a.Name] = []any{"done", json.Number("1")}
		}
		v, err := res.Resolve(executed)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		if p := collectPending(v, 0); len(p) != 0 {
			t.Fatalf("placeholders left after executing all pending actions: %v", p)
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("marshal resolved: %v", err)
		}
		if tg != nil {
			if _, err := tg.Validate(v); err != nil && !errors.Is(err, ErrValidation) {
				t.Fatalf("validate: %v", err)
			}
		}
	})
}
