package lndl

import (
	"encoding/json"
	"testing"
)

// roundVector is the decoded input and expectation of a round vector.
type roundVector struct {
	Input struct {
		Text            string          `json:"text"`
		Target          json.RawMessage `json:"target"`
		ActionResults   json.RawMessage `json:"action_results"`
		ExecutedResults json.RawMessage `json:"executed_results"`
		Notes           json.RawMessage `json:"notes"`
	}
	Expect struct {
		Outcome        string          `json:"outcome"`
		PendingActions json.RawMessage `json:"pending_actions"`
		Assembled      json.RawMessage `json:"assembled"`
		ErrorClass     *string         `json:"error_class"`
		ErrorSubstring *string         `json:"error_substring"`
		ErrorLine      json.RawMessage `json:"error_line"`
		ErrorColumn    json.RawMessage `json:"error_column"`
		Resolved       json.RawMessage `json:"resolved"`
		Validated      json.RawMessage `json:"validated"`
		Notes          json.RawMessage `json:"notes"`
	}
}

func decodeMap(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	m, ok := decodeJSON(t, raw).(map[string]any)
	if !ok {
		t.Fatalf("not an object: %s", raw)
	}
	return m
}

func TestConformanceRound(t *testing.T) {
	vectors := loadVectors(t, "round")
	if len(vectors) != 235 {
		t.Fatalf("round vectors = %d, want 235", len(vectors))
	}
	for _, v := range vectors {
		var rv roundVector
		if err := json.Unmarshal(v.Input, &rv.Input); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(v.Expect, &rv.Expect); err != nil {
			t.Fatal(err)
		}
		var tg *Target
		if len(rv.Input.Target) > 0 && string(rv.Input.Target) != "null" {
			var err error
			if tg, err = ParseTarget(rv.Input.Target); err != nil {
				t.Fatalf("%s: target: %v", v.ID, err)
			}
		}
		t.Run(v.ID, func(t *testing.T) {
			res := Round(RoundInput{
				Text:          rv.Input.Text,
				Target:        tg,
				ActionResults: decodeMap(t, rv.Input.ActionResults),
				Notes:         decodeMap(t, rv.Input.Notes),
			})
			e := rv.Expect
			if got := res.Outcome.String(); got != e.Outcome {
				t.Errorf("outcome %s (err %v), want %s", got, res.Err, e.Outcome)
			}
			pending := res.Pending
			if pending == nil {
				pending = []Action{}
			}
			if d := jsonDiff(pending, decodeJSON(t, e.PendingActions)); d != "" {
				t.Errorf("pending_actions: %s", d)
			}
			if d := jsonDiff(res.Assembled, decodeJSON(t, e.Assembled)); d != "" {
				t.Errorf("assembled: %s", d)
			}
			if e.ErrorClass != nil {
				want := map[string]any{"class": *e.ErrorClass, "substring": *e.ErrorSubstring}
				if len(e.ErrorLine) > 0 {
					want["line"] = json.Number(e.ErrorLine)
					want["column"] = json.Number(e.ErrorColumn)
				}
				matchError(t, res.Err, want)
			} else if res.Err != nil {
				t.Errorf("unexpected error %v", res.Err)
			}
			if d := jsonDiff(res.Notes, decodeJSON(t, e.Notes)); d != "" {
				t.Errorf("notes: %s", d)
			}

			wantResolved := decodeJSON(t, e.Resolved)
			resolved, err := res.Resolve(decodeMap(t, rv.Input.ExecutedResults))
			if res.Outcome != OutcomeSuccess {
				if err == nil || wantResolved != nil {
					t.Errorf("resolve of a %s round: %v, %v (want resolved %v)", res.Outcome, resolved, err, wantResolved)
				}
			} else if err != nil {
				t.Errorf("resolve: %v", err)
			} else if d := jsonDiff(resolved, wantResolved); d != "" {
				t.Errorf("resolved: %s", d)
			}

			wantValidated := decodeJSON(t, e.Validated)
			if wantValidated == nil {
				return
			}
			if tg == nil {
				t.Fatal("validated expected without a target")
			}
			want := wantValidated.(map[string]any)
			value, verr := tg.Validate(resolved)
			if ok := want["ok"].(bool); ok != (verr == nil) {
				t.Errorf("validated ok=%v (err %v, value %v), want ok=%v", verr == nil, verr, value, ok)
			} else if ok {
				if d := jsonDiff(value, want["value"]); d != "" {
					t.Errorf("validated value: %s", d)
				}
			}
		})
	}
}
